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

// platform: the slice's platform, configured (SimPool does it).
double step_lower_bound(const Schedule& schedule, const Slice& slice, SlicePlatform& platform,
                        const Calibration* calibration);

// What a plan cannot beat, from the plan and its global batch alone (no compiled schedule), so that
// the search compiles only candidates that might still win or fit:
// - step: per rank, its microbatches' forward and backward FLOPs (models/costs.hpp, as compile()
//   counts them, recomputation included) at its GPU's peak times the best calibrated matmul
//   efficiency, plus the pipeline's fill and drain (the first forward and last backward of each
//   earlier stage's fastest rank, and the fastest hop between consecutive stages). Every term is
//   one of step_lower_bound()'s, or smaller, so the floor never exceeds it.
// - memory: per rank, its model state plus one microbatch's activations plus the framework; the
//   schedule's peak is never less (a microbatch's forward ends before its backward frees any).
class PlanFloor {
 public:
  PlanFloor(const ModelSpec& model, const Slice& slice, SlicePlatform& platform, int seq,
            Precision precision, const Calibration* calibration);
  double seconds_per_token(const Plan& plan, int global_batch) const;
  // The rank whose memory floor is above its GPU's capacity, or -1; its floor in `bytes`.
  int short_of_memory(const Plan& plan, int global_batch, double* bytes) const;

 private:
  struct Stage {
    double forward = 0, backward = 0, activations = 0, state = 0;  // FLOPs and bytes, per rank
  };
  // Per stage, cached by what the costs depend on (many candidates differ only in their GPUs).
  const std::vector<Stage>& stages(const Plan& plan, int global_batch) const;
  const ModelSpec& model_;
  const Slice& slice_;
  SlicePlatform& platform_;
  int seq_;
  std::vector<double> rate_;  // per slice GPU: FLOP/s it cannot exceed (0: no peak, no floor)
  std::vector<double> capacity_;
  std::vector<double> framework_bytes_;  // per slice GPU
  using StageKey = std::tuple<int, int, int, int, int, bool,
                              std::vector<int>>;  // b tp pp dp zero recompute layers
  mutable std::map<StageKey, std::vector<Stage>> stages_;
};

}  // namespace fabtrain
