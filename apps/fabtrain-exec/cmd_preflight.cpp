// fabtrain-exec preflight [--device cpu|cuda] [--data FILES] [--slice SLICE]: the check before a
// long run, launched with the run's own mpirun line. Every rank reports its host, its device (or
// why it has none), fabtrain's version and the program's checksum, each data file's size and
// checksum, and its round trip to rank 0 over the path MPI uses (the launch line's interface);
// rank 0 prints one table and the mismatches (exec/measure/preflight.hpp) and every rank exits
// non-zero when there is one.
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "command.hpp"
#include "common/data_paths.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "exec/backends/backend.hpp"
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
};

// Median round trip of 8 bytes between rank 0 and `peer` (both call it; others do not).
double round_trip_s(int rank, int peer, int samples) {
  char byte[8] = {};
  std::vector<double> times;
  for (int i = 0; i < samples; ++i) {
    const double start = MPI_Wtime();
    if (rank == 0) {
      MPI_CHECK(MPI_Send(byte, 8, MPI_CHAR, peer, 7, MPI_COMM_WORLD));
      MPI_CHECK(MPI_Recv(byte, 8, MPI_CHAR, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
      MPI_CHECK(MPI_Recv(byte, 8, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      MPI_CHECK(MPI_Send(byte, 8, MPI_CHAR, 0, 7, MPI_COMM_WORLD));
    }
    times.push_back(MPI_Wtime() - start);
  }
  return bench::median(times);
}

// This rank's facts, its round trip measured in turn with rank 0.
RankFacts own_facts(const PreflightOptions& o, MpiCommunicator& comm) {
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
  for (int peer = 1; peer < comm.size(); ++peer) {
    if (comm.rank() == 0 || comm.rank() == peer) {
      const double rtt = round_trip_s(comm.rank(), peer, o.samples);
      if (comm.rank() == peer) r.rtt_to_rank0_s = rtt;
    }
    comm.barrier();
  }
  return r;
}

// Every rank's facts as text, at rank 0 (others: empty).
std::vector<std::string> gather_at_rank0(const std::string& mine, int rank, int size) {
  int length = int(mine.size());
  std::vector<int> lengths(size), offsets(size);
  MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  int total = 0;
  for (int r = 0; r < size; ++r) offsets[r] = total, total += lengths[r];
  std::vector<char> all(std::max(total, 1));
  MPI_CHECK(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                        MPI_CHAR, 0, MPI_COMM_WORLD));
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r) out.emplace_back(all.data() + offsets[r], lengths[r]);
  return out;
}

// The slice's round trip between rank 0's VM and each other rank's, where every rank's host is
// one of the slice's VM names (else none is compared).
void add_expected_rtts(const std::string& slice_arg, std::vector<RankFacts>& ranks) {
  const Slice slice = load_slice(slice_arg);
  auto site_of = [&](const std::string& host) -> const Vm* {
    for (const auto& vm : slice.vms)
      if (vm.name == host) return &vm;
    return nullptr;
  };
  const Vm* first = site_of(ranks.front().host);
  if (!first) {
    fmt::print("slice {}: rank 0's host {} is no VM of it: round trips not compared\n", slice.name,
               ranks.front().host);
    return;
  }
  for (auto& r : ranks) {
    const Vm* vm = site_of(r.host);
    if (r.rank == 0 || !vm || vm->site == first->site) continue;
    r.expected_rtt_s = pair_rtt_s(slice, first->site, vm->site);
  }
}

void run(const PreflightOptions& o) {
  MpiCommunicator comm(nullptr, nullptr);
  if (o.samples < 1) fail("--samples={} must be at least 1", o.samples);
  std::vector<int> all(comm.size());
  for (int r = 0; r < comm.size(); ++r) all[r] = r;
  comm.set_groups({all});
  const RankFacts mine = own_facts(o, comm);
  const auto texts = gather_at_rank0(to_text(mine), comm.rank(), comm.size());
  int failed = 0;
  if (comm.rank() == 0) {
    std::vector<RankFacts> ranks;
    for (const auto& t : texts) ranks.push_back(rank_facts_from_text(t));
    if (!o.slice.empty()) add_expected_rtts(o.slice, ranks);
    fmt::print("fabtrain-exec preflight: {}, device {}, {}\n{}", counted(comm.size(), "rank"),
               o.device, counted(mine.files.size(), "data file"), preflight_table(ranks));
    const auto failures = preflight_failures(ranks);
    for (const auto& f : failures) fmt::print("FAIL {}\n", f);
    fmt::print("{}\n",
               failures.empty() ? "preflight: all clear" : "preflight: fix the above first");
    failed = failures.empty() ? 0 : 1;
  }
  MPI_CHECK(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD));
  if (failed) fail("preflight found mismatches across the ranks (rank 0 lists them)");
}

Registration reg(35, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "preflight",
      "Before a long run, with its mpirun line: every rank's device, version, data checksums "
      "and round trip to rank 0; exits non-zero on any mismatch");
  auto o = std::make_shared<PreflightOptions>();
  cmd->add_option("--device", o->device, "The run's --device (cpu, or cuda)")
      ->capture_default_str();
  cmd->add_option("--data", o->data, "The run's data files (globs; the same on every rank)");
  cmd->add_option("--slice", o->slice,
                  "Compare round trips with this slice's (ranks' host names = its VM names)");
  cmd->add_option("--samples", o->samples, "Round trips per rank")->capture_default_str();
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
