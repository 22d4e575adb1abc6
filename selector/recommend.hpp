// How many GPUs are worth using: for each GPU subset of the search (count and sites) its best
// plan's time to train and GPU-hours; the smallest count within a tolerance of the best
// throughput is recommended, with a sentence saying why.
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
                         double tolerance);

}  // namespace fabtrain
