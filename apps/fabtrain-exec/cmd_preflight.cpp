// fabtrain-exec preflight [--device cpu|cuda] [--data FILES] [--slice SLICE]: the check before a
// long run, launched with the run's own mpirun line. Every rank reports its host, its device (or
// why it has none), fabtrain's version and the program's checksum and each data file's size and
// checksum; then every pair of VMs (the slice's VMs where it places the ranks, else the ranks'
// hosts; the first rank of each VM stands for it) measures the round trip and one timed transfer
// over the path MPI uses (the launch line's interface), in rounds where each VM is in at most one
// pair. Rank 0 prints one table of ranks, one of VM pairs beside the slice's figures, the
// mismatches and the warnings (exec/measure/preflight.hpp), and every rank exits non-zero when
// there is a mismatch. Every exchange is bounded by --timeout-s for the whole check: a rank that
// is dead, stuck (a hung file system) or unreachable ends the job with a message naming it.
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>

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
#include "exec/measure/rank_vms.hpp"
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
enum Tag : int { kFactsLength = 71, kFacts, kPlan, kPing, kTransfer, kAck, kNumbers, kVerdict };
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

// How each rank measures: round trips, transfers of `bytes`, and its partners in round order
// (rank, 1 where it leads the pair), ended by -1. One fixed-size message from rank 0 per rank.
struct MeasurePlan {
  std::vector<std::int64_t> words;  // samples, bytes, then (partner, leads) pairs, then -1
  explicit MeasurePlan(int ranks) : words(std::size_t(3 + 2 * ranks), -1) {}
};

// The numbers of one pair, measured by its leader.
struct PairNumbers {
  double rtt_s = 0, bandwidth = 0;
};

// The leader's side of a pair: the median round trip and the fastest transfer's rate.
PairNumbers lead_pair(int peer, std::int64_t samples, std::int64_t bytes, Communicator& comm,
                      const Deadline& deadline) {
  const std::string what = fmt::format("rank {} measured its link with rank {}", comm.rank(), peer);
  char byte[8] = {};
  std::vector<double> rtts;
  for (std::int64_t i = 0; i < samples; ++i) {
    const double start = MPI_Wtime();
    exchange(true, byte, 8, MPI_CHAR, peer, kPing, deadline, what, comm);
    exchange(false, byte, 8, MPI_CHAR, peer, kPing, deadline, what, comm);
    rtts.push_back(MPI_Wtime() - start);
  }
  PairNumbers n;
  n.rtt_s = bench::median(rtts);
  std::vector<char> buffer(std::size_t(bytes), 1);
  for (int t = 0; t < kTransfers; ++t) {
    const double start = MPI_Wtime();
    exchange(true, buffer.data(), int(bytes), MPI_CHAR, peer, kTransfer, deadline, what, comm);
    exchange(false, byte, 1, MPI_CHAR, peer, kAck, deadline, what, comm);
    // Two round trips are not the transfer's: the acknowledgement's and MPI's rendezvous for a
    // large message (its receiver is asked first).
    const double seconds = std::max(MPI_Wtime() - start - 2 * n.rtt_s, 1e-6);
    n.bandwidth = std::max(n.bandwidth, double(bytes) / seconds);
  }
  return n;
}

// The other side: answer the leader's round trips and transfers.
void answer_pair(int leader, std::int64_t samples, std::int64_t bytes, Communicator& comm,
                 const Deadline& deadline) {
  const std::string what =
      fmt::format("rank {} measured its link with rank {}", leader, comm.rank());
  char byte[8] = {};
  for (std::int64_t i = 0; i < samples; ++i) {
    exchange(false, byte, 8, MPI_CHAR, leader, kPing, deadline, what, comm);
    exchange(true, byte, 8, MPI_CHAR, leader, kPing, deadline, what, comm);
  }
  std::vector<char> buffer(static_cast<std::size_t>(bytes));
  for (int t = 0; t < kTransfers; ++t) {
    exchange(false, buffer.data(), int(bytes), MPI_CHAR, leader, kTransfer, deadline, what, comm);
    exchange(true, byte, 1, MPI_CHAR, leader, kAck, deadline, what, comm);
  }
}

// Every rank's pairs, in round order, from rank 0's plan: returns, per partner this rank led,
// its round trip and rate (2 numbers per rank of the job, 0 elsewhere), as rank 0 gathers them.
std::vector<double> measure_my_pairs(const MeasurePlan& plan, Communicator& comm,
                                     const Deadline& deadline) {
  std::vector<double> numbers(std::size_t(2 * comm.size()), 0.0);
  const auto& w = plan.words;
  for (std::size_t i = 2; w[i] >= 0; i += 2) {
    const int peer = int(w[i]);
    if (w[i + 1]) {
      const PairNumbers n = lead_pair(peer, w[0], w[1], comm, deadline);
      numbers[2 * peer] = n.rtt_s, numbers[2 * peer + 1] = n.bandwidth;
    } else {
      answer_pair(peer, w[0], w[1], comm, deadline);
    }
  }
  return numbers;
}

// Each rank's VM name: the slice's VM where the slice places the ranks (rank_vms.hpp), else the
// rank's host (ranks of one host are one VM).
std::vector<std::string> rank_vm_names(const Slice* slice, const std::vector<RankFacts>& ranks) {
  std::vector<std::string> hosts;
  for (const auto& r : ranks) hosts.push_back(r.host);
  if (!slice) return hosts;
  const std::vector<int> vms = ranks_to_vms(*slice, hosts);
  if (vms.empty()) {
    fmt::print(
        "slice {}: the ranks' hosts are not its VMs and there is not one rank per VM: "
        "each host is taken as one VM and the links are not compared\n",
        slice->name);
    return hosts;
  }
  std::vector<std::string> names;
  for (int v : vms) names.push_back(slice->vms[v].name);
  return names;
}

// One link per pair of VMs, between their first ranks, with the slice's round trip and rate.
std::vector<LinkFacts> plan_links(const Slice* slice, const std::vector<std::string>& vm_names) {
  std::vector<int> first_rank;  // of each VM, in rank order
  for (int r = 0; r < int(vm_names.size()); ++r)
    if (std::find(vm_names.begin(), vm_names.begin() + r, vm_names[r]) == vm_names.begin() + r)
      first_rank.push_back(r);
  auto vm_named = [&](const std::string& name) -> const Vm* {
    for (std::size_t i = 0; slice && i < slice->vms.size(); ++i)
      if (slice->vms[i].name == name) return &slice->vms[i];
    return nullptr;
  };
  std::vector<LinkFacts> links;
  for (const auto& round : pair_rounds(int(first_rank.size())))
    for (const auto& [a, b] : round) {
      LinkFacts l;
      l.rank_a = first_rank[a], l.rank_b = first_rank[b];
      l.vm_a = vm_names[l.rank_a], l.vm_b = vm_names[l.rank_b];
      const Vm* va = vm_named(l.vm_a);
      const Vm* vb = vm_named(l.vm_b);
      if (va && vb) {
        if (va->site != vb->site) l.expected_rtt_s = pair_rtt_s(*slice, va->site, vb->site);
        l.expected_bandwidth = slice_one_stream_rate(*slice, *va, *vb);
      }
      links.push_back(l);
    }
  return links;
}

// Rank 0's plan for every rank: its partners in the links' order (which is the rounds').
std::vector<MeasurePlan> plans_for(const std::vector<LinkFacts>& links, int ranks,
                                   std::int64_t samples, std::int64_t bytes) {
  std::vector<MeasurePlan> plans(static_cast<std::size_t>(ranks), MeasurePlan(ranks));
  std::vector<std::size_t> next(static_cast<std::size_t>(ranks), 2);
  auto add = [&](int rank, int partner, bool leads) {
    plans[rank].words[next[rank]++] = partner;
    plans[rank].words[next[rank]++] = leads;
  };
  for (const auto& l : links) add(l.rank_a, l.rank_b, true), add(l.rank_b, l.rank_a, false);
  for (auto& p : plans) p.words[0] = samples, p.words[1] = bytes;
  return plans;
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

// Rank 0: every rank's plan out, its own pairs, every leader's numbers in, into `links`.
void measure_links(std::vector<LinkFacts>& links, const PreflightOptions& o, Communicator& comm,
                   const Deadline& deadline) {
  const int n = comm.size();
  auto plans = plans_for(links, n, o.samples, std::int64_t(o.transfer_mib * (1 << 20)));
  std::vector<PeerRequest> requests(n - 1);
  for (int p = 1; p < n; ++p) {
    requests[p - 1].peer = p;
    MPI_CHECK(MPI_Isend(plans[p].words.data(), int(plans[p].words.size()), MPI_INT64_T, p, kPlan,
                        MPI_COMM_WORLD, &requests[p - 1].request));
  }
  wait_by_deadline(requests, deadline, "rank 0 sent each rank its VM pairs", comm);
  std::vector<std::vector<double>> numbers(static_cast<std::size_t>(n));
  numbers[0] = measure_my_pairs(plans[0], comm, deadline);
  for (int p = 1; p < n; ++p) {
    numbers[p].resize(std::size_t(2 * n));
    MPI_CHECK(MPI_Irecv(numbers[p].data(), 2 * n, MPI_DOUBLE, p, kNumbers, MPI_COMM_WORLD,
                        &requests[p - 1].request));
  }
  wait_by_deadline(requests, deadline, "rank 0 gathered the VM pairs' measurements", comm);
  for (auto& l : links) {
    l.rtt_s = numbers[l.rank_a][2 * l.rank_b];
    l.bandwidth = numbers[l.rank_a][2 * l.rank_b + 1];
  }
}

// Any other rank: its plan from rank 0, its pairs, its numbers to rank 0.
void measure_links_as_peer(Communicator& comm, const Deadline& deadline) {
  MeasurePlan plan(comm.size());
  exchange(false, plan.words.data(), int(plan.words.size()), MPI_INT64_T, 0, kPlan, deadline,
           "rank 0 sent each rank its VM pairs", comm);
  std::vector<double> numbers = measure_my_pairs(plan, comm, deadline);
  exchange(true, numbers.data(), int(numbers.size()), MPI_DOUBLE, 0, kNumbers, deadline,
           "rank 0 gathered the VM pairs' measurements", comm);
}

// Rank 0's report: both tables, the failures and warnings, the verdict line; 1 on a failure.
int report(const PreflightOptions& o, const std::vector<RankFacts>& ranks,
           const std::vector<LinkFacts>& links, const std::string& slice_error) {
  fmt::print("fabtrain-exec preflight: {}, device {}, {}\n{}", counted(ranks.size(), "rank"),
             o.device, counted(ranks.front().files.size(), "data file"), preflight_table(ranks));
  if (links.empty())
    fmt::print("no link between VMs to measure: every rank is on one VM\n");
  else
    fmt::print("{} between VMs:\n{}", counted(links.size(), "link"), link_table(links));
  auto failures = preflight_failures(ranks);
  for (const auto& f : link_failures(links)) failures.push_back(f);
  if (!slice_error.empty()) failures.push_back("--slice: " + slice_error);
  for (const auto& f : failures) fmt::print("FAIL {}\n", f);
  for (const auto& w : link_warnings(links)) fmt::print("WARN {}\n", w);
  fmt::print("{}\n", failures.empty() ? "preflight: all clear" : "preflight: fix the above first");
  return failures.empty() ? 0 : 1;
}

void run(const PreflightOptions& o) {
  MpiCommunicator comm(nullptr, nullptr);
  if (o.samples < 1) fail("--samples={} must be at least 1", o.samples);
  // Other ranks wait a little longer, so that rank 0, which knows which peer is missing, speaks.
  const Deadline deadline(o.timeout_s, comm.rank() == 0 ? 0 : 5);
  const RankFacts mine = own_facts(o, comm);
  std::vector<RankFacts> ranks = gather_facts(mine, comm, deadline);
  int failed = 0;
  if (comm.rank() != 0) {
    measure_links_as_peer(comm, deadline);
  } else {
    std::string slice_error;  // said as a mismatch: a throw here would leave the others waiting
    std::optional<Slice> slice;
    try {
      if (!o.slice.empty()) slice = load_slice(o.slice);
    } catch (const Error& e) {
      slice_error = e.what();
    }
    const Slice* known = slice ? &*slice : nullptr;
    std::vector<LinkFacts> links = plan_links(known, rank_vm_names(known, ranks));
    measure_links(links, o, comm, deadline);
    failed = report(o, ranks, links, slice_error);
  }
  if (share_verdict(failed, comm, deadline))
    fail("preflight found mismatches across the ranks (rank 0 lists them)");
}

Registration reg(35, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "preflight",
      "Before a long run, with its mpirun line: every rank's device, version, data checksums, and "
      "every VM pair's round trip and transfer rate against the slice's; exits non-zero on any "
      "mismatch");
  auto o = std::make_shared<PreflightOptions>();
  cmd->add_option("--device", o->device, "The run's --device (cpu, or cuda)")
      ->capture_default_str();
  cmd->add_option("--data", o->data, "The run's data files (globs; the same on every rank)");
  cmd->add_option(
      "--slice", o->slice,
      fmt::format("Compare each VM pair with this slice (ranks' host names = its VM names, "
                  "else one rank per VM in its file's order): a round trip above {:g} x the "
                  "slice's + 1 ms (another path) or a transfer under {:g} x its rate "
                  "(another interface or a slower link than the prediction assumes) fails; "
                  "a round trip under the slice's / {:g} - 1 ms is a warning",
                  kRttSlack, kBandwidthFloor, kRttSlack));
  cmd->add_option("--samples", o->samples, "Round trips per VM pair")->capture_default_str();
  cmd->add_option("--transfer-mib", o->transfer_mib,
                  "Size of the timed transfer within each VM pair (the fastest of three)")
      ->capture_default_str();
  cmd->add_option("--timeout-s", o->timeout_s,
                  "The whole check's limit: a rank that has not answered by then is named and "
                  "the job ends non-zero (0: no limit)")
      ->capture_default_str();
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
