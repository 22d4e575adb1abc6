// Calibration: measured corrections to the catalog's cost parameters, fitted elsewhere (from
// executor run records) and only read and applied here. Per GPU type and instruction kind it may
// override the matmul and memory efficiencies and the per-kernel overhead; per link class
// (pcie, nvlink, l2bridge, l2sts, switched) the per-hop latency, the bandwidth and the TCP window.
// Not here: the fitting itself, or anything that changes the schedule. Its writer is
// calibration_file.hpp, next to this reader.
//
// YAML form (unknown keys are rejected, every key is optional):
//   compute:
//     GPU_RTX6000:
//       forward:   {matmul_efficiency: 0.55, memory_efficiency: 0.7, kernel_overhead_s: 8e-6}
//       backward:  {matmul_efficiency: 0.5}
//       optimizer: {memory_efficiency: 0.6}
//   links:
//     l2sts: {latency_s: 0.0002, bandwidth: 1.2e9, tcp_window_bytes: 4194304}
//   collectives:
//     all_reduce:     {latency_terms: 2.4, bandwidth_factor: 0.5, overhead_s: 2e-4,
//                      small_bytes: 4096, small_latency_terms: 1}
//     reduce_scatter: {latency_terms: 2, bandwidth_factor: 1}
//   p2p: {latency_terms: 1.3, overhead_s: 5e-5}
//   held_out_step_error: 0.08     # a fraction; what calibrate measured on held-out runs
//
// A collective correction (per op; both keys required when the op is named) replaces the
// ring/tree cost of every call of that op by
//     overhead_s + latency_terms * alpha + bytes * bandwidth_factor / B
// (small_latency_terms instead of latency_terms for calls of at most small_bytes, both optional)
// where overhead_s (optional, default 0) is a per-call cost that does not grow with the path,
// bytes is the call's buffer (the Collective instruction's bytes), alpha the largest
// one-way route latency between ring neighbours of the group and B the smallest one-flow rate
// between them (slowest link, or the TCP window's limit when lower: sim/tcp_window.hpp). It is
// played as the ring shape (group_collective.hpp) with each member sending bytes *
// bandwidth_factor to its successor, so contention and window caps still apply; uncontended it
// is exactly the formula. latency_terms >= 1 (a flow pays one latency itself). For collective
// libraries that do not play NCCL's ring (e.g. OpenMPI's 2-rank reduce-scatter: two dependent
// messages). Ops not named keep the ring/tree default.
// The terms are a two-rank call's, as benches between two sites measure them: over n ranks a ring
// takes n-1 times the steps and moves 2(n-1)/n times the bytes per member, so latency_terms and
// bandwidth_factor are scaled so (correction_latency_scale, correction_volume_scale); a fit over
// calls of n ranks divides by the same.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "plan/schedule.hpp"
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

// How a two-rank correction grows over a ring of n ranks (see the file comment); 1 at n = 2.
inline double correction_latency_scale(int n) { return n > 2 ? n - 1.0 : 1.0; }
inline double correction_volume_scale(int n) { return n > 2 ? 2.0 * (n - 1) / n : 1.0; }
// The same for a reduce-scatter via the group's root (CommunicatorProfile::
// started_reduce_scatter_via_root, played as sim/group_collective.hpp's "via root" shape), over
// two sites of n/2 ranks each in rank order, as a plan's data-parallel group over two sites is:
// one reduce round (the whole buffer) and the scatter (a part) cross the path, against a two-rank
// call's buffer and a half; its latency terms stay a two-rank call's.
inline double via_root_volume_scale(int n) { return n > 2 ? (1.0 + 1.0 / n) / 1.5 : 1.0; }

struct CollectiveCalibration {
  double latency_terms = 1;     // multiples of the group's one-way latency, >= 1
  double bandwidth_factor = 1;  // multiples of bytes / the group's bottleneck rate, >= 0
  double overhead_s = 0;        // per call, whatever the path: the library's own time
  // Calls of at most small_bytes (0: none) pay small_latency_terms instead: libraries switch to a
  // latency-optimal algorithm for small buffers (OpenMPI's 2-rank all-reduce of a scalar is one
  // exchange, of 64 KiB and more a reduce-scatter then an all-gather).
  double small_bytes = 0;
  double small_latency_terms = 1;  // >= 1
};

// Point-to-point messages (pipeline sends): a message is ready for its receiver
// (latency_terms - 1) * the route's one-way latency + overhead_s after its bytes arrive.
struct P2pCalibration {
  double latency_terms = 1;  // >= 1
  double overhead_s = 0;
};

struct Calibration {
  std::map<std::string, std::map<WorkKind, ComputeCalibration>> compute;  // by GPU type name
  std::map<std::string, LinkCalibration> links;                           // by link class name
  std::map<CollectiveOp, CollectiveCalibration> collectives;              // absent: ring/tree
  std::optional<P2pCalibration> p2p;                                      // absent: one flow
  // Mean absolute step-time error of runs predicted by a fit that left them out (calibrate
  // --runs with two or more runs): plans closer than this are reported as a tie.
  std::optional<double> held_out_step_error;
  std::string source;  // the file it came from, for the resolved configuration

  bool empty() const { return compute.empty() && links.empty() && collectives.empty() && !p2p; }
};

// Throws fabtrain::Error naming the file and the key that is unknown or out of range; GPU types
// and link classes must be the catalog's.
Calibration load_calibration(const std::string& path, const Catalog& catalog = builtin_catalog());

// The compute parameters that apply to one GPU type and kind: the catalog's defaults with the
// calibration's overrides on top.
struct ComputeParameters {
  double matmul_efficiency = 0;
  double memory_efficiency = 0;
  double kernel_overhead_s = 0;
};
ComputeParameters compute_parameters(const ComputeDefaults& defaults, const Calibration& cal,
                                     const std::string& gpu, WorkKind kind);
// The same from given parameters (the catalog's as they apply to one GPU type and precision).
ComputeParameters calibrated(ComputeParameters base, const Calibration& cal, const std::string& gpu,
                             WorkKind kind);

}  // namespace fabtrain
