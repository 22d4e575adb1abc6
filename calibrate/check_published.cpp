// Simulates each published run on a slice built from its hardware and compares with what was
// measured (see check_published.hpp).
#include "calibrate/check_published.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>

#include "calibrate/framework_profile.hpp"
#include "common/error.hpp"
#include "plan/schedule.hpp"
#include "sim/memory.hpp"
#include "sim/simulator.hpp"

namespace fabtrain {

Catalog shaped_catalog(const PublishedRun& run, const Catalog& catalog) {
  const PublishedHardware& h = run.hardware;
  Catalog c = catalog;
  if (h.shaped_gbit_s > 0) {
    NicType& nic = c.nics.at(h.nic);
    nic.bandwidth = std::min(nic.bandwidth, h.shaped_gbit_s * 1e9 / 8);
    nic.source += fmt::format("; shaped to {} Gbit/s by the run (tc)", h.shaped_gbit_s);
  }
  if (h.added_delay_ms > 0) {
    // The l2bridge latency is split over the sender's and the receiver's NIC, and netem delays
    // each packet once, on the sender's egress: the one-way latency grows by the delay.
    LinkClass& cls = c.link_classes.at("l2bridge");
    cls.latency_s += h.added_delay_ms * 1e-3;
    cls.source += fmt::format("; {} ms added one way by the run (tc netem)", h.added_delay_ms);
  }
  return c;
}

Slice published_slice(const PublishedRun& run, const Catalog& catalog) {
  const PublishedHardware& h = run.hardware;
  Slice s;
  s.name = "published-" + run.id;
  s.description = fmt::format("{} x {} {} ({}){}", h.nodes, h.gpus_per_node, h.gpu, h.intra_node,
                              h.nodes > 1 ? ", nodes over " + h.network + " (" + h.nic + ")" : "");
  s.catalog = &catalog;
  s.communicator = catalog.communicator(run.communicator);
  Network net{"between-nodes",
              "l2bridge",
              {},
              {"ONPREM"},
              -1,
              0,
              h.network == "infiniband" ? 0.0 : -1.0,
              "",
              ""};
  for (int n = 0; n < h.nodes; ++n) {
    // A single node's NIC carries nothing; any catalog NIC will do.
    Vm vm{fmt::format("node{}", n),
          "ONPREM",
          h.gpu,
          h.gpus_per_node,
          h.nodes > 1 ? h.nic : "NIC_ConnectX_6",
          h.intra_node};
    net.vms.push_back(vm.name);
    s.vms.push_back(vm);
  }
  if (h.nodes > 1) s.networks.push_back(net);
  return s;
}

namespace {

// The bytes of one rank that a source's kind of peak memory counts.
double bytes_of_kind(const RankMemory& m, MemoryKind kind) {
  switch (kind) {
    case MemoryKind::allocated:
      return m.allocated_bytes();
    case MemoryKind::reserved:
      return m.reserved_bytes();
    case MemoryKind::device_used:
      return m.peak_bytes();
  }
  return m.peak_bytes();
}

// Memory with the run's framework memory profile: the peak of the measured kind and the verdict.
void check_memory(const PublishedRun& run, const Schedule& schedule, const Slice& slice,
                  PublishedCheck& c) {
  const MemoryEstimate mem = estimate_memory(
      schedule, slice, &slice.catalog->framework_memory_profile(run.framework_memory));
  c.oom = mem.oom;
  c.measured_oom = run.measured.oom;
  if (!run.measured.peak_memory_bytes) return;
  double peak = 0;
  for (const RankMemory& r : mem.ranks)
    peak = std::max(peak, bytes_of_kind(r, run.measured.memory_kind));
  c.predicted_memory_bytes = peak;
  c.measured_memory_bytes = run.measured.peak_memory_bytes;
  c.memory_error = (peak - *c.measured_memory_bytes) / *c.measured_memory_bytes;
}

// One run on a Simulator already built for its slice.
PublishedCheck check_on(const PublishedRun& run, Simulator& simulator, const Slice& slice) {
  PublishedCheck c;
  c.id = run.id;
  c.timed = run.measured.timed();
  c.measured_step_s = run.measured.step_time_s;
  try {
    Schedule schedule = compile(run.model, run.plan, run.global_batch, run.seq);
    if (run.framework_profile) apply_framework(schedule, run.model, *run.framework_profile);
    check_memory(run, schedule, slice, c);
    if (c.timed) c.predicted_step_s = simulator.run(run.model, schedule).step_time_s;
  } catch (const Error& e) {
    fail("row {} ({}): cannot be simulated: {}", run.row, run.id, e.what());
  }
  if (c.timed) c.error = (c.predicted_step_s - c.measured_step_s) / c.measured_step_s;
  return c;
}

}  // namespace

PublishedCheck check_published_run(const PublishedRun& run, const Catalog& catalog) {
  const Catalog shaped = shaped_catalog(run, catalog);
  const Slice slice = published_slice(run, shaped);
  Simulator simulator(slice);
  return check_on(run, simulator, slice);
}

double median_abs(std::vector<double> values) {
  if (values.empty()) return 0;
  for (double& v : values) v = std::fabs(v);
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

PublishedSummary check_published(const std::string& path, const Catalog& catalog) {
  const PublishedFile file = load_published_runs(path, catalog);
  PublishedSummary s;
  s.rows = file.rows;
  s.problems = file.problems;
  // SimGrid seals its platform at the first simulation: every slice is built before any run.
  std::vector<std::unique_ptr<Simulator>> simulators;
  std::deque<Catalog> catalogs;  // each slice points at its run's (shaped) catalog
  std::vector<Slice> slices;
  for (const PublishedRun& run : file.runs) {
    catalogs.push_back(shaped_catalog(run, catalog));
    slices.push_back(published_slice(run, catalogs.back()));
    simulators.push_back(std::make_unique<Simulator>(slices.back()));
  }
  std::vector<double> errors, memory_errors;
  for (std::size_t i = 0; i < file.runs.size(); ++i) {
    const PublishedRun& run = file.runs[i];
    try {
      s.checks.push_back(check_on(run, *simulators[i], slices[i]));
    } catch (const Error& e) {
      s.problems.push_back(e.what());
      continue;
    }
    s.runs.push_back(run);
    const PublishedCheck& c = s.checks.back();
    if (c.timed) errors.push_back(c.error);
    if (c.memory_error) memory_errors.push_back(*c.memory_error);
    s.oom_rows += c.measured_oom.has_value();
    s.oom_agreeing += c.oom_agrees();
  }
  s.timed_rows = int(errors.size());
  s.median_abs_error = median_abs(errors);
  s.memory_rows = int(memory_errors.size());
  if (!memory_errors.empty()) s.median_abs_memory_error = median_abs(memory_errors);
  return s;
}

}  // namespace fabtrain
