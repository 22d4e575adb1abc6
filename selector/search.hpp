// The search: enumerate every plan of the space, prune those that cannot fit in memory (from the
// schedule alone, no simulation), simulate the rest on worker processes (one per core, each with
// its own long-lived SimGrid Engine), best first by a compute lower bound, skipping plans whose
// bound cannot beat the best found on the same GPUs, and rank them by throughput.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "selector/enumerate.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain {

struct SearchOptions {
  SearchSpace space;
  const Calibration* calibration = nullptr;
  int workers = 0;                      // 0 = one per core
  std::optional<double> train_tokens;   // for time to train
  bool exhaustive = false;              // simulate every plan that fits (no bound pruning)
};

struct Evaluated {
  Candidate candidate;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  double time_to_train_s = 0;       // 0 when no token count was given
  double peak_memory_bytes = 0;     // of the rank with the least headroom
  double memory_capacity_bytes = 0; // of that rank
  std::string memory_rank;          // "rank 3 (GPU_TeslaT4 at GPN)"
  bool oom = false;
  std::string reason;               // why it does not fit, or why it failed to simulate
};

struct SearchResult {
  std::vector<Evaluated> ranked;         // fastest first (tokens/s, then fewer GPUs)
  std::vector<Evaluated> out_of_memory;  // pruned before simulation, with the reason
  std::vector<Evaluated> failed;         // did not simulate (should stay empty)
  int enumerated = 0;
  int skipped_recompute = 0;  // recompute=on twins of plans that fit without it
  int bounded = 0;            // skipped: their compute alone is slower than their GPUs' best
  double seconds = 0;
};

// Evaluates the given candidates (memory, then simulation); used by search() and by the rule.
SearchResult evaluate(const ModelSpec& model, const Slice& slice,
                      const std::vector<Candidate>& candidates, const SearchOptions& options);
SearchResult search(const ModelSpec& model, const Slice& slice, const SearchOptions& options);

// "4 GPUs: 2x GPU_RTX6000@UTAH + 2x GPU_RTX6000@AMST"
std::string describe_gpus(const Slice& slice, const std::vector<int>& gpus);

}  // namespace fabtrain
