// The study's figures as predictions: for each cluster and model, each technique's predicted
// TFLOP/s per GPU or its out-of-memory cross; as rows, and as an HTML page with SVG bar charts.
// Not here: the study's selection procedure (study_rule.hpp), simulating (sim/).
#pragma once
#include <string>
#include <vector>

#include "selector/search.hpp"

namespace fabtrain {

struct StudyCell {
  std::string cluster;
  std::string model;
  std::string technique;
  bool oom = false;
  bool unavailable = false;  // the technique does not apply (e.g. heads not divisible)
  double tflops_per_gpu = 0;
  double step_time_s = 0;
  std::string plan = {};
  std::string note = {};  // OOM reason
};

// Evaluates the study's techniques (study_techniques) on every GPU of each cluster.
std::vector<StudyCell> study_cells(const std::vector<std::string>& clusters,
                                   const std::vector<std::string>& models,
                                   const SearchOptions& options);

std::string study_html(const std::vector<StudyCell>& cells);

}  // namespace fabtrain
