// Why the winner wins: which term of its step dominates (compute, exposed communication, pipeline
// bubble: the simulator's breakdown of the critical rank), and by how much it beats the best plan
// of each other technique family (data parallel, ZeRO, shard, pipeshard), each found by its own
// exact search over that family's plans.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "selector/search.hpp"

namespace fabtrain {

enum class Family { data_parallel, zero, shard, pipeshard };
const char* to_string(Family family);  // "data parallel", "ZeRO", "shard", "pipeshard"
// pp > 1: pipeshard; else tp > 1: shard; else zero > 0: ZeRO; else data parallel (one GPU too).
Family family_of(const Plan& plan);

// "compute 2.10 s (82%)": the largest of the three terms of the step, with its share.
std::string dominant_term(const Evaluated& e);

struct Rival {
  Family family;
  std::optional<Evaluated> best;  // none when no plan of the family fits
  double cost_ratio = 0;          // its objective cost / the winner's (> 1: the winner is better)
};

struct WinnerExplanation {
  std::string winner;              // one sentence on the winner's step
  std::vector<Rival> rivals;       // the other three families
  std::vector<std::string> lines;  // one sentence per rival
};

// winner: the search's best under options.objective.
WinnerExplanation explain_winner(const ModelSpec& model, const Slice& slice,
                                 const SearchOptions& options, const Evaluated& winner);

}  // namespace fabtrain
