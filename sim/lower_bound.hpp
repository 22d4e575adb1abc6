// Lower bounds of a step's time without simulating it, so that a search skips plans that cannot
// win: from a compiled schedule (step_lower_bound; see lower_bound.cpp for what it counts) and
// from a plan alone (PlanFloor). The test suite checks that neither exceeds the simulated step.
// Reached through SimPool (sim_pool.hpp), which configures the platform they read.
// Not here: simulating (simulator.hpp) or choosing plans (selector/).
#pragma once
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/slice_platform.hpp"

namespace fabtrain {

// What step_lower_bound reads of a compiled schedule, all but the links: per rank its compute
// (on its GPU, under the calibration), the collectives it calls and the peers it sends
// activations to. It holds for any round trips of the slice's hardware, so a plan compiled once
// is bounded again under other round trips without compiling it again.
struct BoundInputs {
  struct Call {
    int group = 0;
    CollectiveOp op = CollectiveOp::all_reduce;
    double bytes = 0;
    bool started = false;     // overlap=on: it may hide behind compute
    bool via_root = false;    // a reduce-scatter played via the group's root
    bool calibrated = false;  // a fitted collective correction: no bandwidth term
    int count = 1;            // calls alike in all the above
  };
  struct Rank {
    double compute = 0, forward0 = 0, backward_last = 0;  // seconds
    std::vector<Call> calls;            // alike calls once, counted (gradient buckets)
    std::vector<int> activation_peers;  // each once
  };
  Plan plan;
  std::vector<std::vector<int>> groups;
  std::vector<Rank> ranks;
};
BoundInputs bound_inputs(const Schedule& schedule, const Slice& slice,
                         const Calibration* calibration);

// platform: the slice's platform, configured (SimPool does it).
double step_lower_bound(const BoundInputs& inputs, const Slice& slice, SlicePlatform& platform);
double step_lower_bound(const Schedule& schedule, const Slice& slice, SlicePlatform& platform,
                        const Calibration* calibration);

// What a plan cannot beat, from the plan and its global batch alone (no compiled schedule), so that
// the search compiles only candidates that might still win or fit:
// - step: per rank, its microbatches' forward and backward FLOPs (models/costs.hpp, as compile()
//   counts them, recomputation included) at its GPU's peak times the best calibrated matmul
//   efficiency, plus the pipeline's fill and drain (the first forward and last backward of each
//   earlier stage's fastest rank, and the fastest hop between consecutive stages); or, if more,
//   the gradients of a data-parallel group over several sites across its slowest site cut. Every
//   term is one of step_lower_bound()'s, or smaller, so the floor never exceeds it.
// - memory: per rank, its model state plus the activations of the microbatches it must hold at
//   once (GPipe: all; 1F1B: pp - stage, at most mb) plus the framework; the schedule's peak is
//   never less (those forwards end before the first backward frees any).
class PlanFloor {
 public:
  PlanFloor(const ModelSpec& model, const Slice& slice, SlicePlatform& platform, int seq,
            Precision precision, const Calibration* calibration);
  double seconds_per_token(const Plan& plan, int global_batch) const;
  // Of every plan on these devices (slice GPU indices): the model's FLOPs per token at their
  // summed rate (any split does at least the whole model's work; 0 where a GPU has no peak).
  double seconds_per_token_on(const std::vector<int>& devices) const;
  // Of every plan on any of these devices, in GPU-seconds per token: the model's FLOPs per token
  // at the fastest one's rate (the GPU-hours objective's floor).
  double fastest_gpu_seconds_per_token(const std::vector<int>& devices) const;
  // The rank whose memory floor is above its GPU's capacity, or -1; its floor in `bytes`.
  int short_of_memory(const Plan& plan, int global_batch, double* bytes) const;

 private:
  struct Stage {
    double forward = 0, backward = 0, activations = 0, state = 0;  // FLOPs and bytes, per rank
  };
  // Per stage, cached by what the costs depend on (many candidates differ only in their GPUs).
  const std::vector<Stage>& stages(const Plan& plan, int global_batch) const;
  double cut_seconds(const std::vector<int>& devices, double bytes, int calls) const;
  // The first device of each VM among `devices`. GPUs of one VM are alike (one type, one path
  // each: sim/slice_platform.hpp), so a route's latency, rate and window depend on the two VMs
  // only, and a 1024-GPU plan's pairs reduce to its VMs' pairs.
  std::vector<int> one_per_vm(const std::vector<int>& devices) const;
  // The least route latency from a device of `from` to a device of `to` (disjoint sets), cached:
  // the candidates of one GPU subset share their stages' devices.
  double least_latency(const std::vector<int>& from, const std::vector<int>& to) const;
  double gradient_seconds(const Plan& plan) const;
  const ModelSpec& model_;
  const Slice& slice_;
  SlicePlatform& platform_;
  int seq_;
  Precision precision_;
  std::vector<double> rate_;  // per slice GPU: FLOP/s it cannot exceed (0: no peak, no floor)
  std::vector<double> capacity_;
  bool calibrated_collectives_ = false;  // a fitted correction: no bandwidth term (as the bound)
  mutable std::map<std::tuple<std::vector<int>, double, int>, double> cut_seconds_;
  mutable std::map<std::pair<std::vector<int>, std::vector<int>>, double> least_latency_;
  std::vector<double> framework_bytes_;  // per slice GPU
  std::vector<int> vm_;                  // per slice GPU: its VM
  using StageKey = std::tuple<int, int, int, int, int, bool,
                              std::vector<int>>;  // b tp pp dp zero recompute layers
  mutable std::map<StageKey, std::vector<Stage>> stages_;
};

}  // namespace fabtrain
