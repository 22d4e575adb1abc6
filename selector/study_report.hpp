// The study's figures as predictions: for each cluster and model, each technique's predicted
// TFLOP/s per GPU or its out-of-memory cross; as rows, and as an HTML page with SVG bar charts.
// Not here: the study's selection procedure (study_rule.hpp), simulating (sim/).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "selector/search.hpp"
#include "selector/study_published.hpp"

namespace fabtrain {

struct StudyCell {
  std::string cluster;
  std::string model;
  std::string technique;
  bool oom = false;
  bool unavailable = false;  // the technique does not apply (e.g. heads not divisible)
  double tflops_per_gpu = 0;
  double step_time_s = 0;
  double tokens_per_s = 0;
  std::string plan = {};
  std::string note = {};  // OOM reason
};

// Evaluates the study's techniques (study_techniques) on every GPU of each cluster.
std::vector<StudyCell> study_cells(const std::vector<std::string>& clusters,
                                   const std::vector<std::string>& models,
                                   const SearchOptions& options);

// What the report says about how it was made, beside the figures.
struct StudyReportContext {
  std::string command;      // as typed
  std::string version;      // fabtrain's
  std::string date;         // UTC, ISO 8601
  std::string calibration;  // "catalog defaults" or the calibration file
  std::vector<std::string> assumptions;
  StudyMeasurement measured;           // the study's published figure
  std::optional<double> train_tokens;  // for predicted minutes; without it the ratio only
};

// The value axis of every chart: a round top and step (1, 2, 2.5 or 5 times a power of ten),
// about `ticks` steps, the top at or above `max_value`.
struct ValueAxis {
  double top = 1;
  double step = 0.2;
};
ValueAxis round_axis(double max_value, int ticks = 5);

// One chart per cluster, every one on the same scale, as standalone SVG files (cluster, text).
std::vector<std::pair<std::string, std::string>> study_svgs(const std::vector<StudyCell>& cells);

std::string study_html(const std::vector<StudyCell>& cells, const StudyReportContext& context);

}  // namespace fabtrain
