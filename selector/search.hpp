// The search: enumerate every plan of the space; visit them best first by a floor that needs no
// schedule (PlanFloor); compile a visited plan to check its memory and take its full lower bound
// (step_lower_bound); simulate, through sim/sim_pool.hpp (one process per simulation, one per
// core at a time), always the plans of least bound; skip every plan whose bound cannot beat what
// must stay exact (the best plan of each GPU set, or the top k overall); rank by the objective
// (selector/objective.hpp). Since no bound exceeds the simulated step, the kept plans are exactly
// the exhaustive search's.
// Not here: the space (enumerate.hpp), the bounds and simulating (sim/), the GPU-count choice
// (recommend.hpp).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "selector/enumerate.hpp"
#include "selector/objective.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain {

struct SearchOptions {
  SearchSpace space;
  const Calibration* calibration = nullptr;
  int workers = 0;                     // 0 = one per core
  std::optional<double> train_tokens;  // for time to train
  bool exhaustive = false;             // simulate every plan that fits (no bound pruning)
  // What the bound must keep exact: 0 = the best plan of every GPU set (recommend needs them);
  // k > 0 = the k fastest plans overall (plan's table), which prunes far more on many sites.
  int keep_top = 0;
  // What "best" means (ranked's order, and what keep_top keeps exact).
  Objective objective = Objective::time_to_train;
  // A plan whose predicted peak leaves less than this fraction of a GPU free is "tight": the
  // memory model's error (bench/published, check-published) and what it leaves out could take it
  // over, and an out-of-memory failure costs the reservation. A tight plan ranks below every plan
  // with headroom whose cost is within tight_tolerance of its own. 0: no plan is tight.
  double memory_headroom = 0.10;
  double tight_tolerance = 0.10;
};

struct Evaluated {
  Candidate candidate;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  double time_to_train_s = 0;        // 0 when no token count was given
  double peak_memory_bytes = 0;      // of the rank with the least headroom
  double memory_capacity_bytes = 0;  // of that rank
  double free_fraction = 0;          // the least free fraction of a GPU over the plan's ranks
  bool tight = false;                // fits, but leaves less free than options.memory_headroom
  std::string memory_rank;           // "rank 3 (GPU_TeslaT4 at GPN)"
  // The simulated step's split on its critical rank (sim/simulator.hpp's Breakdown).
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0;
  double communication_s = 0;  // in flight, hidden behind compute or not (not in the split)
  bool oom = false;
  std::string reason;  // why it does not fit, or why it failed to simulate
};

struct SearchResult {
  std::vector<Evaluated> ranked;         // best first by the objective, then fewer GPUs
  std::vector<Evaluated> out_of_memory;  // pruned before simulation, with the reason
  std::vector<Evaluated> failed;         // did not simulate (should stay empty)
  int enumerated = 0;
  int skipped_recompute = 0;    // recompute=on twins of plans that fit without it
  int skipped_overlap_off = 0;  // overlap=off twins of plans that fit with overlap
  int bounded = 0;              // skipped: their bound cannot beat what must stay exact
  int compiled = 0;             // schedules compiled for memory and bounds (the rest never were)
  double seconds = 0;
};

// The cost per token a plan ranks by: its objective's `cost`, raised by the tolerance when the
// plan is tight, so that a plan with headroom within the tolerance ranks before it.
double ranking_cost(const Evaluated& e, double cost, const SearchOptions& options);

// Evaluates the given candidates (memory, then simulation); used by search() and by the rule.
SearchResult evaluate(const ModelSpec& model, const Slice& slice,
                      const std::vector<Candidate>& candidates, const SearchOptions& options);
SearchResult search(const ModelSpec& model, const Slice& slice, const SearchOptions& options);

// "4 GPUs: 2x GPU_RTX6000@UTAH + 2x GPU_RTX6000@AMST"
std::string describe_gpus(const Slice& slice, const std::vector<int>& gpus);
// The GPUs counted per key (e.g. type@site), keys in order of first appearance.
std::vector<std::pair<std::string, int>> count_gpus_by(
    const Slice& slice, const std::vector<int>& gpus,
    const std::function<std::string(const SliceGpu&)>& key);

}  // namespace fabtrain
