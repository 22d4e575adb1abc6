// How many GPUs are worth using: the plan search (its objective, every GPU set's best kept exact),
// then for each GPU subset (count and sites) its best plan's time to train and GPU-hours; the
// smallest count whose objective cost is within a tolerance of the best is recommended, with a
// sentence saying why.
// Not here: the search that evaluates the subsets (search.hpp).
#pragma once
#include <string>
#include <vector>

#include "selector/search.hpp"

namespace fabtrain {

struct CountChoice {
  int gpus = 0;
  std::vector<std::string> sites;
  Evaluated best;
  double time_to_train_s = 0;
  double gpu_hours = 0;
};

struct Recommendation {
  std::vector<CountChoice> choices;  // one per subset, fewest GPUs first
  int chosen = -1;                   // index into choices
  std::string why;
};

Recommendation recommend(const SearchResult& result, const Slice& slice, double train_tokens,
                         double tolerance, Objective objective = Objective::time_to_train);

}  // namespace fabtrain
