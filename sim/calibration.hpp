// Calibration: measured corrections to the catalog's cost parameters, fitted elsewhere (from
// executor run records) and only read and applied here. Per GPU type and instruction kind it may
// override the matmul and memory efficiencies and the per-kernel overhead; per link class
// (pcie, nvlink, l2bridge, l2sts, switched) the per-hop latency, the bandwidth and the TCP window.
// Not here: the fitting itself, or anything that changes the schedule.
//
// YAML form (unknown keys are rejected, every key is optional):
//   compute:
//     GPU_RTX6000:
//       forward:   {matmul_efficiency: 0.55, memory_efficiency: 0.7, kernel_overhead_s: 8e-6}
//       backward:  {matmul_efficiency: 0.5}
//       optimizer: {memory_efficiency: 0.6}
//   links:
//     l2sts: {latency_s: 0.0002, bandwidth: 1.2e9, tcp_window_bytes: 4194304}
#pragma once
#include <map>
#include <optional>
#include <string>

#include "platforms/catalog.hpp"

namespace fabtrain {

enum class WorkKind { forward, backward, optimizer };
const char* to_string(WorkKind kind);

struct ComputeCalibration {
  std::optional<double> matmul_efficiency;
  std::optional<double> memory_efficiency;
  std::optional<double> kernel_overhead_s;
};

struct LinkCalibration {
  std::optional<double> latency_s;         // one-way, per hop of the class
  std::optional<double> bandwidth;         // bytes/s, replaces the line rate times efficiency
  std::optional<double> tcp_window_bytes;  // 0 = not window-limited
};

struct Calibration {
  std::map<std::string, std::map<WorkKind, ComputeCalibration>> compute;  // by GPU type name
  std::map<std::string, LinkCalibration> links;                           // by link class name
  std::string source;  // the file it came from, for the resolved configuration

  bool empty() const { return compute.empty() && links.empty(); }
};

// Throws fabtrain::Error naming the file and the key that is unknown or out of range.
Calibration load_calibration(const std::string& path);

// The compute parameters that apply to one GPU type and kind: the catalog's defaults with the
// calibration's overrides on top.
struct ComputeParameters {
  double matmul_efficiency = 0;
  double memory_efficiency = 0;
  double kernel_overhead_s = 0;
};
ComputeParameters compute_parameters(const ComputeDefaults& defaults, const Calibration& cal,
                                     const std::string& gpu, WorkKind kind);

}  // namespace fabtrain
