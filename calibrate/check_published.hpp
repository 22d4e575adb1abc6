// The simulator against runs others measured (fabtrain check-published, bench_published): builds
// each published run's slice from its stated hardware, compiles its plan (adding the kernels of
// its framework profile, where it names one: calibrate/framework_profile.hpp), simulates one step
// uncalibrated (catalog defaults) with the communicator profile the run's NCCL transport
// corresponds to, and compares with the measured step time (and peak memory where published).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "calibrate/published_runs.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {

struct PublishedCheck {
  std::string id;
  double predicted_step_s = 0;
  double measured_step_s = 0;
  double error = 0;  // (predicted - measured) / measured
  std::optional<double> predicted_memory_bytes, measured_memory_bytes, memory_error;
  bool oom = false;  // the simulator says the plan does not fit the stated GPUs
};

// The slice of a published run: nodes ONPREM/node0..n-1 of gpus_per_node GPUs on NVLink or PCIe,
// joined (nodes > 1) by one l2bridge network over each node's NIC; InfiniBand is RDMA, so not
// TCP-window limited.
Slice published_slice(const PublishedRun& run, const Catalog& catalog = builtin_catalog());
// The catalog a run's slice is built on: `catalog` itself, or, where the run shaped its Ethernet
// (tc netem), a copy with the node NIC's rate capped and the one-way delay added to l2bridge.
Catalog shaped_catalog(const PublishedRun& run, const Catalog& catalog = builtin_catalog());
// Simulates one run; throws fabtrain::Error naming the run when it cannot be simulated. Builds
// a Simulator, so (SimGrid) only before a process's first simulation or for a slice already built.
PublishedCheck check_published_run(const PublishedRun& run,
                                   const Catalog& catalog = builtin_catalog());

struct PublishedSummary {
  std::vector<PublishedRun> runs;      // the rows simulated, in file order
  std::vector<PublishedCheck> checks;  // parallel to runs
  std::vector<std::string> problems;   // bad rows and rows that could not be simulated
  int rows = 0;
  double median_abs_error = 0;                    // over checks, step time
  std::optional<double> median_abs_memory_error;  // over checks with published memory
  int memory_rows = 0;
};
// Loads the file and checks every good row, collecting problems instead of stopping.
PublishedSummary check_published(const std::string& path,
                                 const Catalog& catalog = builtin_catalog());
// The median of |x| (0 for none).
double median_abs(std::vector<double> values);

}  // namespace fabtrain
