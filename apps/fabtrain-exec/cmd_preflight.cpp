// fabtrain-exec preflight [--device cpu|cuda] [--data FILES] [--slice SLICE]: the check before a
// long run, launched with the run's own mpirun line. Every rank reports its host, its device (or
// why it has none), fabtrain's version and the program's checksum and each data file's size and
// checksum; rank 0 then measures, with each other rank in turn, the round trip and one timed
// transfer over the path MPI uses (the launch line's interface). Rank 0 prints one table, the
// mismatches and the warnings (exec/measure/preflight.hpp), and every rank exits non-zero when
// there is a mismatch. Every exchange is bounded by --timeout-s for the whole check: a rank that
// is dead, stuck (a hung file system) or unreachable ends the job with a message naming it.
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "command.hpp"
#include "common/data_paths.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "exec/backends/backend.hpp"
#include "exec/comm/deadline_wait.hpp"
#include "exec/comm/mpi_check.hpp"
#include "exec/comm/mpi_communicator.hpp"
#include "exec/measure/bench_timing.hpp"
#include "exec/measure/preflight.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {
namespace {

struct PreflightOptions {
  std::string device = "cpu", slice;
  std::vector<std::string> data;
  int samples = 20;
  double transfer_mib = 8;
  double timeout_s = 60;
};

// Tags of the preflight's messages (its own communicator is MPI_COMM_WORLD, used by nothing else).
enum Tag : int { kFactsLength = 71, kFacts, kPlan, kPing, kTransfer, kAck, kVerdict };
constexpr int kTransfers = 3;  // the fastest of three transfers counts (the first warms TCP up)

// One point-to-point operation against the deadline.
void exchange(bool send, void* data, int count, MPI_Datatype type, int peer, int tag,
              const Deadline& deadline, const std::string& what, Communicator& comm) {
  std::vector<PeerRequest> r(1);
  r[0].peer = peer;
  if (send)
    MPI_CHECK(MPI_Isend(data, count, type, peer, tag, MPI_COMM_WORLD, &r[0].request));
  else
    MPI_CHECK(MPI_Irecv(data, count, type, peer, tag, MPI_COMM_WORLD, &r[0].request));
  wait_by_deadline(r, deadline, what, comm);
}

// This rank's own facts (no communication).
RankFacts own_facts(const PreflightOptions& o, const Communicator& comm) {
  RankFacts r;
  r.rank = comm.rank();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  r.host = host;
  try {
    const BackendEntry& entry = find_backend(o.device);
    r.device_error = entry.unavailable();
    if (r.device_error.empty())
      r.device = entry.make(BackendSettings{.comm = "mpi", .host = r.host}).description;
  } catch (const std::exception& e) {
    r.device_error = e.what();
  }
  r.version = FABTRAIN_VERSION;
  r.binary_checksum = file_facts("/proc/self/exe").checksum;
  for (const auto& pattern : o.data) {
    try {
      for (const auto& path : expand_data_paths({pattern})) r.files.push_back(file_facts(path));
    } catch (const Error& e) {  // a path or glob that names nothing here: a mismatch to report
      r.files.push_back({pattern, -1, "", e.what()});
    }
  }
  return r;
}

// Every rank's facts at rank 0, each rank's awaited until the deadline (others: send theirs).
std::vector<RankFacts> gather_facts(const RankFacts& mine, Communicator& comm,
                                    const Deadline& deadline) {
  const std::string text = to_text(mine);
  if (comm.rank() != 0) {
    std::int64_t length = std::int64_t(text.size());
    const std::string what = "rank 0 gathered every rank's facts";
    exchange(true, &length, 1, MPI_INT64_T, 0, kFactsLength, deadline, what, comm);
    exchange(true, const_cast<char*>(text.data()), int(text.size()), MPI_CHAR, 0, kFacts, deadline,
             what, comm);
    return {};
  }
  const int n = comm.size();
  std::vector<std::int64_t> lengths(n);
  std::vector<PeerRequest> requests(n - 1);
  for (int p = 1; p < n; ++p) {
    requests[p - 1].peer = p;
    MPI_CHECK(MPI_Irecv(&lengths[p], 1, MPI_INT64_T, p, kFactsLength, MPI_COMM_WORLD,
                        &requests[p - 1].request));
  }
  wait_by_deadline(requests, deadline, "rank 0 gathered every rank's facts", comm);
  std::vector<std::string> texts(n);
  for (int p = 1; p < n; ++p) {
    texts[p].resize(std::size_t(lengths[p]));
    MPI_CHECK(MPI_Irecv(texts[p].data(), int(lengths[p]), MPI_CHAR, p, kFacts, MPI_COMM_WORLD,
                        &requests[p - 1].request));
  }
  wait_by_deadline(requests, deadline, "rank 0 gathered every rank's facts", comm);
  std::vector<RankFacts> ranks{mine};
  for (int p = 1; p < n; ++p) ranks.push_back(rank_facts_from_text(texts[p]));
  return ranks;
}

// What rank 0 asks of a peer before measuring with it: round trips, then transfers of `bytes`.
struct MeasurePlan {
  std::int64_t samples = 0, bytes = 0;
};

// Rank 0's side with one peer: the median round trip and the fastest transfer's rate.
void measure_with(int peer, const MeasurePlan& plan, RankFacts& facts, Communicator& comm,
                  const Deadline& deadline) {
  const std::string what = "rank 0 measured its link with rank " + std::to_string(peer);
  MeasurePlan sent = plan;
  exchange(true, &sent, 2, MPI_INT64_T, peer, kPlan, deadline, what, comm);
  char byte[8] = {};
  std::vector<double> rtts;
  for (std::int64_t i = 0; i < plan.samples; ++i) {
    const double start = MPI_Wtime();
    exchange(true, byte, 8, MPI_CHAR, peer, kPing, deadline, what, comm);
    exchange(false, byte, 8, MPI_CHAR, peer, kPing, deadline, what, comm);
    rtts.push_back(MPI_Wtime() - start);
  }
  facts.rtt_to_rank0_s = bench::median(rtts);
  std::vector<char> buffer(std::size_t(plan.bytes), 1);
  double best = 0;
  for (int t = 0; t < kTransfers; ++t) {
    const double start = MPI_Wtime();
    exchange(true, buffer.data(), int(plan.bytes), MPI_CHAR, peer, kTransfer, deadline, what, comm);
    exchange(false, byte, 1, MPI_CHAR, peer, kAck, deadline, what, comm);
    // Two round trips are not the transfer's: the acknowledgement's and MPI's rendezvous for a
    // large message (its receiver is asked first).
    const double seconds = std::max(MPI_Wtime() - start - 2 * facts.rtt_to_rank0_s, 1e-6);
    best = std::max(best, double(plan.bytes) / seconds);
  }
  facts.bandwidth_from_rank0 = best;
}

// A peer's side: answer rank 0's round trips and transfers when its turn comes.
void answer_rank0(Communicator& comm, const Deadline& deadline) {
  const std::string what = "rank 0 measured its link with rank " + std::to_string(comm.rank());
  MeasurePlan plan;
  exchange(false, &plan, 2, MPI_INT64_T, 0, kPlan, deadline, what, comm);
  char byte[8] = {};
  for (std::int64_t i = 0; i < plan.samples; ++i) {
    exchange(false, byte, 8, MPI_CHAR, 0, kPing, deadline, what, comm);
    exchange(true, byte, 8, MPI_CHAR, 0, kPing, deadline, what, comm);
  }
  std::vector<char> buffer(std::size_t(plan.bytes));
  for (int t = 0; t < kTransfers; ++t) {
    exchange(false, buffer.data(), int(plan.bytes), MPI_CHAR, 0, kTransfer, deadline, what, comm);
    exchange(true, byte, 1, MPI_CHAR, 0, kAck, deadline, what, comm);
  }
}

// The slice's round trip and one-stream rate between rank 0's VM and each other rank's, where the
// ranks' hosts are the slice's VM names (else none is compared; ranks of one VM neither).
void add_slice_expectations(const std::string& slice_arg, std::vector<RankFacts>& ranks) {
  const Slice slice = load_slice(slice_arg);
  auto vm_of = [&](const std::string& host) -> const Vm* {
    for (const auto& vm : slice.vms)
      if (vm.name == host) return &vm;
    return nullptr;
  };
  const Vm* first = vm_of(ranks.front().host);
  if (!first) {
    fmt::print("slice {}: rank 0's host {} is no VM of it: links not compared\n", slice.name,
               ranks.front().host);
    return;
  }
  for (auto& r : ranks) {
    const Vm* vm = vm_of(r.host);
    if (r.rank == 0 || !vm || vm == first) continue;
    if (vm->site != first->site) r.expected_rtt_s = pair_rtt_s(slice, first->site, vm->site);
    r.expected_bandwidth = slice_one_stream_rate(slice, *first, *vm);
  }
}

// Rank 0's verdict to every rank: 1 when there is a mismatch.
int share_verdict(int failed, Communicator& comm, const Deadline& deadline) {
  const std::string what = "rank 0 sent its verdict";
  if (comm.rank() != 0) {
    exchange(false, &failed, 1, MPI_INT, 0, kVerdict, deadline, what, comm);
    return failed;
  }
  std::vector<PeerRequest> requests(comm.size() - 1);
  for (int p = 1; p < comm.size(); ++p) {
    requests[p - 1].peer = p;
    MPI_CHECK(
        MPI_Isend(&failed, 1, MPI_INT, p, kVerdict, MPI_COMM_WORLD, &requests[p - 1].request));
  }
  wait_by_deadline(requests, deadline, what, comm);
  return failed;
}

void run(const PreflightOptions& o) {
  MpiCommunicator comm(nullptr, nullptr);
  if (o.samples < 1) fail("--samples={} must be at least 1", o.samples);
  // Other ranks wait a little longer, so that rank 0, which knows which peer is missing, speaks.
  const Deadline deadline(o.timeout_s, comm.rank() == 0 ? 0 : 5);
  const RankFacts mine = own_facts(o, comm);
  std::vector<RankFacts> ranks = gather_facts(mine, comm, deadline);
  const MeasurePlan plan{o.samples, std::int64_t(o.transfer_mib * (1 << 20))};
  if (comm.rank() != 0) answer_rank0(comm, deadline);
  for (int peer = 1; comm.rank() == 0 && peer < comm.size(); ++peer)
    measure_with(peer, plan, ranks[peer], comm, deadline);
  int failed = 0;
  if (comm.rank() == 0) {
    std::string slice_error;  // said as a mismatch: a throw here would leave the others waiting
    try {
      if (!o.slice.empty()) add_slice_expectations(o.slice, ranks);
    } catch (const Error& e) {
      slice_error = e.what();
    }
    fmt::print("fabtrain-exec preflight: {}, device {}, {}\n{}", counted(comm.size(), "rank"),
               o.device, counted(mine.files.size(), "data file"), preflight_table(ranks));
    auto failures = preflight_failures(ranks);
    if (!slice_error.empty()) failures.push_back("--slice: " + slice_error);
    for (const auto& f : failures) fmt::print("FAIL {}\n", f);
    for (const auto& w : preflight_warnings(ranks)) fmt::print("WARN {}\n", w);
    fmt::print("{}\n",
               failures.empty() ? "preflight: all clear" : "preflight: fix the above first");
    failed = failures.empty() ? 0 : 1;
  }
  if (share_verdict(failed, comm, deadline))
    fail("preflight found mismatches across the ranks (rank 0 lists them)");
}

Registration reg(35, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "preflight",
      "Before a long run, with its mpirun line: every rank's device, version, data checksums, "
      "round trip and transfer rate from rank 0; exits non-zero on any mismatch");
  auto o = std::make_shared<PreflightOptions>();
  cmd->add_option("--device", o->device, "The run's --device (cpu, or cuda)")
      ->capture_default_str();
  cmd->add_option("--data", o->data, "The run's data files (globs; the same on every rank)");
  cmd->add_option("--slice", o->slice,
                  "Compare round trips and transfer rates with this slice's (ranks' host names = "
                  "its VM names)");
  cmd->add_option("--samples", o->samples, "Round trips per rank")->capture_default_str();
  cmd->add_option("--transfer-mib", o->transfer_mib,
                  "Size of the timed transfer from rank 0 to each rank (the fastest of three)")
      ->capture_default_str();
  cmd->add_option("--timeout-s", o->timeout_s,
                  "The whole check's limit: a rank that has not answered by then is named and "
                  "the job ends non-zero (0: no limit)")
      ->capture_default_str();
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
