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
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "selector/enumerate.hpp"
#include "selector/objective.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/sim_pool.hpp"

namespace fabtrain {

struct Evaluated;

// What the searches of one command share, by plan text and global batch. Simulations and bounds
// hold for one slice (its round trips) and calibration; what compiling a plan tells (its memory,
// and its schedule where kept) holds for any round trips of the slice's hardware.
struct SimMemo {
  std::map<std::string, SimOutcome> outcomes;
  std::map<std::string, double> bounds;  // step_lower_bound, seconds
  // Steps known by other means to bound a plan from below, seconds (break-even: its step at a
  // shorter round trip); a plan's bound is the larger of this and its own.
  std::map<std::string, double> floors;
};
// What compiling a plan told (CompiledPlan, below), by plan text and global batch.
struct CompiledPlan;
using PlanMemo = std::map<std::string, CompiledPlan>;

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
  // Also keep exact the best plan of each technique family (selector/family.hpp), each within
  // its own share of the budgets, so that one search answers and says why (why_it_wins.hpp): a
  // family whose bounds are loose cannot spend the others' budget.
  bool best_of_each_family = false;
  // Only the plans this accepts are in the space (none: every plan).
  std::function<bool(const Plan&)> only;
  // Only the GPU subsets this accepts are in the space (none: every subset): a cap on GPUs or
  // sites, since every plan of a subset runs on all of its GPUs; the subsets it refuses are never
  // opened, where `only` would refuse their plans one by one.
  std::function<bool(const GpuSubset&)> only_subsets;
  // Simulations already made on this slice with this calibration, by plan and batch: reused, and
  // the search's own added (the "why" and what-if searches share the main search's).
  SimMemo* memo = nullptr;
  // Memory estimates shared by searches of the same hardware under other round trips (the "why"
  // searches, break-even's what-ifs).
  PlanMemo* compiled = nullptr;
  // Keep in the plan memo what each compiled plan's bound reads (sim/lower_bound.hpp's
  // BoundInputs): searches of the same plans under other round trips (break-even) then bound them
  // without compiling again. Off elsewhere: on many sites it would hold every compiled plan's.
  bool keep_bound_inputs = false;
  // A cost per token (the objective's) known to be reachable elsewhere: plans whose bound cannot
  // beat it are skipped (none simulated may then be returned).
  double must_beat = 1e300;
  // When set, the caller needs only the answer this names of the best plan (break-even: the
  // winner's technique and where it runs), not the best plan itself: a plan whose answer is the
  // current best's cannot change it, so it is simulated only if the best turns to another answer.
  // ranked.front() then gives the right answer, but not always that answer's fastest plan.
  std::function<std::string(const Candidate&)> answer_of;
  std::string must_beat_answer;  // the answer of the plan behind must_beat
  // How much work the search may do, in rank-microbatches (a plan's ranks x microbatches: what
  // compiling it, and simulating it, grows with): beyond, it stops and reports the gap between
  // its best plan and the least bound of what it did not simulate. Sized so that a search of all
  // of FABRIC stays within about ten seconds on 2 cores (bench/bench_search.cpp): compiling is
  // most of a spent search's time, about 25 us per rank-microbatch here, and on the testbed's
  // availability four times this budget found the same best plan with the same gap; 0: no limit.
  double compile_budget = 2.5e5;
  double simulate_budget = 1.5e4;
  // Plans enumerated (what memory grows with): subsets are no longer opened beyond it.
  double enumerate_budget = 1e5;
  // A plan whose predicted peak leaves less than this fraction of a GPU free is "tight": the
  // memory model's error (calibrate/data/published_runs.yaml, check-published) and what it leaves
  // out could take it over, and an out-of-memory failure costs the reservation. A tight plan ranks
  // below every plan with headroom whose cost is within tight_tolerance of its own. 0: no plan is
  // tight.
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

// What compiling a plan told: its memory (Evaluated's memory fields, and whether it fits) and
// what its step's lower bound reads of it (sim/lower_bound.hpp), under any round trips of the
// slice's hardware and one calibration.
struct CompiledPlan {
  Evaluated memory;
  std::optional<BoundInputs> bound;  // kept where SearchOptions::keep_bound_inputs asked for it
};

inline constexpr int kOutOfMemoryKept = 1000;

struct SearchResult {
  std::vector<Evaluated> ranked;         // best first by the objective, then fewer GPUs
  std::vector<Evaluated> out_of_memory;  // pruned before simulation, with the reason (the first
                                         // kOutOfMemoryKept: examples, not the whole testbed's)
  int out_of_memory_count = 0;
  std::vector<Evaluated> failed;              // did not simulate (should stay empty)
  int enumerated = 0;                         // plans of the subsets opened
  std::array<int, 4> enumerated_by_family{};  // of them, by Family (selector/family.hpp)
  int subsets = 0;                            // GPU subsets of the space
  int subsets_opened = 0;          // whose plans were enumerated (the rest: their floor lost)
  int subsets_bounded = 0;         // never opened: their floor cannot beat what must stay exact
  int simulated = 0;               // simulations run (the rest came from the memo)
  int site_sets = 0;               // sets of sites tried (selector/site_sets.hpp)
  bool space_exact = true;         // every set of sites (up to symmetry) was in the space
  int sites_left_out_at_most = 0;  // beyond exact: every set leaving out this many was tried
  double left_out_floor = 0;       // beyond exact: the least cost per token of any other set
  // The least cost per token (the objective's) any plan of the space not simulated could reach.
  double least_unsimulated_cost = 1e300;
  int skipped_recompute = 0;    // recompute=on twins of plans that fit without it
  int skipped_overlap_off = 0;  // overlap=off twins of plans that fit with overlap
  int bounded = 0;              // skipped: their bound cannot beat what must stay exact
  int compiled = 0;             // schedules compiled for memory and bounds (the rest never were)
  bool budget_spent = false;    // the search stopped at its work budget (see gap())
  double seconds = 0;

  // How much better than the best found a plan not simulated could be, as a fraction of the
  // best's cost (0: the best is exact).
  double gap(Objective objective) const;
};

// The cost per token a plan ranks by: its objective's `cost`, raised by the tolerance when the
// plan is tight, so that a plan with headroom within the tolerance ranks before it.
double ranking_cost(const Evaluated& e, double cost, const SearchOptions& options);

// Evaluates the given candidates (memory, then simulation); used by search() and by the rule.
SearchResult evaluate(const ModelSpec& model, const Slice& slice,
                      const std::vector<Candidate>& candidates, const SearchOptions& options);
SearchResult search(const ModelSpec& model, const Slice& slice, const SearchOptions& options);

// The key of a plan and its global batch in the memos.
std::string memo_key(const Plan& plan, int global_batch);

// "4 GPUs: 2x GPU_RTX6000@UTAH + 2x GPU_RTX6000@AMST"
std::string describe_gpus(const Slice& slice, const std::vector<int>& gpus);
// The GPUs counted per key (e.g. type@site), keys in order of first appearance.
std::vector<std::pair<std::string, int>> count_gpus_by(
    const Slice& slice, const std::vector<int>& gpus,
    const std::function<std::string(const SliceGpu&)>& key);

}  // namespace fabtrain
