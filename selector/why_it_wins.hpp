// Why the winner wins: which term of its step dominates (compute, exposed communication, pipeline
// bubble: the simulator's breakdown of the critical rank), and by how much it beats the best plan
// of each other technique family (data parallel, ZeRO, shard, pipeshard: selector/family.hpp), as
// the search kept each family's best (SearchOptions::best_of_each_family).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "selector/family.hpp"
#include "selector/search.hpp"

namespace fabtrain {

// "compute 2.10 s (82%)": the largest of the three terms of the step, with its share.
std::string dominant_term(const Evaluated& e);

struct Rival {
  Family family;
  std::optional<Evaluated> best;  // none when no plan of the family fits
  double cost_ratio = 0;          // its objective cost / the winner's (> 1: the winner is better)
};

struct WinnerExplanation {
  std::string winner;              // one sentence on the winner's step
  std::vector<Rival> rivals;       // the other families (a single GPU's: all four, on 2+ GPUs)
  std::vector<std::string> lines;  // one sentence per rival
};

// Of a search made with options.best_of_each_family: its winner (ranked.front()) against the best
// plan of each other family it ranked. A family with no plan ranked is named with why. A plan on
// one GPU is called "single GPU", as winner or rival.
WinnerExplanation explain_winner(const SearchResult& result, const SearchOptions& options);

}  // namespace fabtrain
