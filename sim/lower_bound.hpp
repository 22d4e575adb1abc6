// A lower bound of a schedule's step time from the schedule and the slice alone (no
// simulation), so that the search skips plans that cannot win. See lower_bound.cpp for what it
// counts; the test suite checks it never exceeds the simulated step.
#pragma once
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "plan/schedule.hpp"
#include "selector/enumerate.hpp"
#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/slice_platform.hpp"

namespace fabtrain {

// platform: the slice's platform, configured (SlicePlatform::of(slice).configure(...)).
double step_lower_bound(const Schedule& schedule, const Slice& slice, SlicePlatform& platform,
                        const Calibration* calibration);

// What a candidate cannot beat, from its plan alone (no compiled schedule), so that the search
// compiles only candidates that might still win or fit:
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
  double seconds_per_token(const Candidate& candidate) const;
  // The rank whose memory floor is above its GPU's capacity, or -1; its floor in `bytes`.
  int short_of_memory(const Candidate& candidate, double* bytes) const;

 private:
  struct Stage {
    double forward = 0, backward = 0, activations = 0, state = 0;  // FLOPs and bytes, per rank
  };
  // Per stage, cached by what the costs depend on (many candidates differ only in their GPUs).
  const std::vector<Stage>& stages(const Candidate& candidate) const;
  const ModelSpec& model_;
  const Slice& slice_;
  SlicePlatform& platform_;
  int seq_;
  std::vector<double> rate_;  // per slice GPU: FLOP/s it cannot exceed (0: no peak, no floor)
  std::vector<double> capacity_;
  double framework_bytes_ = 0;
  using StageKey = std::tuple<int, int, int, int, int, bool, std::vector<int>>;  // b tp pp dp zero recompute layers
  mutable std::map<StageKey, std::vector<Stage>> stages_;
};

}  // namespace fabtrain
