// The simulator against runs others measured (fabtrain check-published, bench_published): builds
// each published run's slice from its stated hardware, compiles its plan (adding the kernels of
// its framework profile, where it names one: calibrate/framework_profile.hpp), simulates one step
// uncalibrated (catalog defaults) with the communicator profile the run's NCCL transport
// corresponds to, and compares with the measured step time, the peak memory of the kind the
// source measured (with the framework memory profile of the run's framework) and the source's
// out-of-memory verdict, each where published.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "calibrate/published_runs.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {

struct PublishedCheck {
  std::string id;
  bool timed = false;  // the row has a measured step time (the others check memory only)
  double predicted_step_s = 0;
  double measured_step_s = 0;
  double error = 0;  // (predicted - measured) / measured; 0 for a row without a step time
  // The peak of the measured kind over the run's ranks (with the run's framework memory profile).
  std::optional<double> predicted_memory_bytes, measured_memory_bytes, memory_error;
  bool oom = false;                  // the memory model says the plan does not fit the stated GPUs
  std::optional<bool> measured_oom;  // what the source says, where it does
  bool oom_agrees() const { return measured_oom && *measured_oom == oom; }
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
  double median_abs_error = 0;  // over checks with a step time
  int timed_rows = 0;
  std::optional<double> median_abs_memory_error;  // over checks with published memory
  int memory_rows = 0;
  // Rows whose source says whether the run ran out of memory, and those the model puts on the
  // same side.
  int oom_rows = 0, oom_agreeing = 0;
};
// Loads the file and checks every good row, collecting problems instead of stopping.
PublishedSummary check_published(const std::string& path,
                                 const Catalog& catalog = builtin_catalog());
// The median of |x| (0 for none).
double median_abs(std::vector<double> values);

}  // namespace fabtrain
