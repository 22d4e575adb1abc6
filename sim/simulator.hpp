// The simulator: plays a Schedule on the SimGrid platform of a slice and predicts the step time,
// throughput, the split into compute / exposed communication / pipeline bubble, and memory.
//
// How each instruction is played, one SimGrid actor per rank walking its stream in order:
//   Forward/Backward/OptimizerStep  a roofline on the rank's GPU:
//       max(flops / (peak * matmul_eff), bytes / (mem_bw * mem_eff)) + kernel_overhead * blocks
//       (where the catalog's roofline is "sum": the products' time, the longer of their FLOPs
//       and their own operands' bytes, plus the element-wise kernels' bytes, plus the overhead
//       per kernel; fp16/bf16 products at the tensor-core efficiency; sim/cost/compute_cost.hpp)
//       (peak by the plan's precision: fp32 -> FP32 peak, fp16 -> FP16 tensor, bf16 -> BF16),
//       efficiencies and overhead from the catalog's ComputeDefaults or the calibration.
//   LoadMicrobatch                  free (the data loader runs ahead of the GPU).
//   Send                            an asynchronous flow to the peer (awaited at the end of the
//   step). Recv                            posted at the start of the step, awaited here (plus the
//       calibration's p2p extra latency terms and overhead after the bytes arrive).
//   Starts and waits (overlap=on, plan/schedule.hpp): a started Send is the same flow, awaited
//       at its Wait; a started Recv is posted where it stands and awaited at its Wait; a started
//       Collective is played on the rank's host while the rank goes on, by its group's lane (one
//       actor per rank and group) or, where the communicator progresses calls together, by a
//       helper actor of its own; its Wait awaits its completion. A rank's calls of one
//       group run one at a time in stream order (one NCCL stream or MPI communicator),
//       blocking ones after the started ones.
//       Communication does not slow concurrent compute here: on a GPU the NIC's DMA and NCCL's
//       few SMs leave the kernels' FLOPs and most of their memory bandwidth alone, and no
//       measurement in this repository gives a slowdown to calibrate (an assumption; a CPU
//       executor's TCP progress on the compute cores is the case it would miss).
//   Collective                      as NCCL plays it. Default (automatic): the call is played as
//       a few concurrent flows started when the last member arrives (group_collective.hpp): a
//       ring shape, each member sending its whole ring volume to its successor plus the ring's
//       remaining latency terms (O(n) flows, same alpha-beta time, contention still emerges), or
//       for all-reduce a binary tree where NCCL's alpha-beta choice would pick it (large groups,
//       small buffers). fast: always the ring shape. ring: step by step, all-reduce 2(n-1) steps,
//       reduce-scatter and all-gather n-1, each a flow of bytes/n to the ring neighbour (O(n^2)
//       flows per call; for checking the others).
//       An op the calibration corrects (sim/cost/calibration.hpp, collectives:) is played in every
//       mode as the ring shape with the calibrated latency terms and volume.
//   Consecutive compute instructions are played as one timed sleep (the trace still shows each).
// Every flow between two VMs over a window-limited link class is limited by its TCP window
// (tcp_window * streams): its first window at line rate, the rest at window / RTT (tcp_window.hpp).
//
// Breakdown of the critical rank (the one that finishes last): compute_s is its busy compute
// time; bubble_s is the time it waited in a Recv before the peer had even sent (pipeline idle);
// exposed_comm_s the rest of its waiting (bytes in flight, collectives, waits, sends draining at
// the end). They add up to the step time. communication_s, beside them, is how long any of its
// communication was in flight: with overlap, more than the exposed part. With zero-cost
// communication and uniform stages the bubble is step * (p-1) / (m+p-1).
//
// A Simulator lives long: one per slice, reused for many schedules (the Engine and the slice's
// platform are built once per process; see sim_process.hpp and slice_platform.hpp). Simulations
// run one at a time (SimGrid's Engine is a process singleton); sim_pool.hpp runs many at once,
// each in a process of its own.
#pragma once
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "plan/timeline.hpp"
#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/memory.hpp"

namespace fabtrain {

enum class CollectiveMode { automatic, ring, fast };

struct SimOptions {
  const Calibration* calibration = nullptr;  // none: the catalog's defaults
  CollectiveMode collectives = CollectiveMode::automatic;
  bool trace = false;  // record a timeline (SimResult::trace)
};

struct Breakdown {
  double compute_s = 0;
  double exposed_comm_s = 0;
  double bubble_s = 0;
  // Time any of the rank's transfers or collectives is in flight (the union of their spans),
  // hidden behind compute or not; not part of the sum above. exposed_comm_s <= communication_s
  // up to the waits' own latency terms.
  double communication_s = 0;
};

// One span of the timeline (plan/timeline.hpp: lanes compute, communication the rank waits for,
// communication in flight), from the start of the step.
using TraceEvent = TimelineEvent;

struct RankResult {
  int rank = 0;
  std::string gpu;  // GpuType name
  std::string site;
  double finish_s = 0;
  Breakdown breakdown;
  double peak_memory_bytes = 0;
  double memory_capacity_bytes = 0;
};

struct SimResult {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;  // the study's (Alpa's) formula, recompute counted when on
  double mfu = 0;             // model FLOPs (no recompute) / step / sum of the ranks' peaks
  Breakdown breakdown;        // of the critical rank
  int critical_rank = 0;
  std::vector<RankResult> ranks;
  MemoryEstimate memory;
  bool oom = false;
  std::vector<TraceEvent> trace;  // when SimOptions::trace
};

class Simulator {
 public:
  explicit Simulator(const Slice& slice);

  // The slice as simulated; change its latencies or bandwidths (e.g. override_wan_latency)
  // between runs for what-if questions, not its VMs or networks.
  Slice& slice() { return slice_; }
  const Slice& slice() const { return slice_; }

  // Plays one step. Throws fabtrain::Error when the plan does not fit the slice, the schedule
  // refers to a group or peer that does not exist, or the streams deadlock.
  SimResult run(const ModelSpec& model, const Schedule& schedule, const SimOptions& options = {});

 private:
  Slice slice_;
};

}  // namespace fabtrain
