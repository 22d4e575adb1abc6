// The overlap measurement's table (fabtrain validation overlap), from the work folder of
// scripts/validate-emulated.sh run by scripts/measure-overlap.sh: per one-way delay and plan, each
// run with overlap=off and overlap=on, the measured step (median after the first), the step
// predicted from the benches alone (sim-cal-bench), their error, the least waiting rank's exposed
// communication per step (overlap=on's against overlap=off's) and the step time overlap hid
// (off minus on); last, the mean absolute percentage error over the cases measured. Where several
// models ran, each one's rows follow its name.
// Not here: measuring or predicting (the scripts run the programs), the validation's own report
// (validation_report.hpp).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace fabtrain {

struct OverlapReportInput {
  std::string work;
  std::vector<std::string> models;         // as run: built-in names or config.json files
  std::vector<std::string> delays, plans;  // each plan ends in ",overlap=off" or ",overlap=on"
  std::string player;                      // train or replay
};
// Prints the table; returns whether any case was measured.
bool print_overlap_report(const OverlapReportInput& input, std::FILE* out);

}  // namespace fabtrain
