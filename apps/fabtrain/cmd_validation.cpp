// fabtrain validation cases|report: the emulated-link validation's data and its report.
// `cases --mode M --list models|plans|delays` prints one of a mode's lists from the matrix
// (calibrate/data/validation_matrix.yaml), a word a line, for scripts/validate-emulated.sh to
// loop over; `report --mode M --work DIR` prints the tables from the script's work folder
// (calibrate/validation_report.hpp) and, with --judge, exits 1 when the mode misses its limit.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "calibrate/validation_matrix.hpp"
#include "calibrate/validation_report.hpp"
#include "command.hpp"
#include "common/error.hpp"

namespace fabtrain {
namespace {

struct ValidationOptions {
  std::string matrix = builtin_validation_matrix_path();
  std::string mode = "default";
  std::string list;                         // cases: models | plans | delays
  std::string work;                         // report
  std::vector<std::string> models, delays;  // report: what the script ran, when it narrowed them
  bool judge = false;
};

void print_cases(const ValidationOptions& o) {
  const ValidationMode mode = load_validation_mode(o.matrix, o.mode);
  const std::vector<std::string>* items = o.list == "models"   ? &mode.models
                                          : o.list == "plans"  ? &mode.plans
                                          : o.list == "delays" ? &mode.delays
                                                               : nullptr;
  if (!items) fail("--list {}: expected models, plans or delays", o.list);
  for (const std::string& item : *items) fmt::print("{}\n", item);
}

void print_report(const ValidationOptions& o) {
  ValidationReportInput input{load_validation_mode(o.matrix, o.mode), o.work, o.judge};
  if (!o.models.empty()) input.mode.models = o.models;
  if (!o.delays.empty()) input.mode.delays = o.delays;
  const bool passed = print_validation_report(input, stdout);
  std::fflush(stdout);
  if (!passed) fail("validation mode {}: not passed (see above)", o.mode);
}

void add_common(CLI::App* cmd, ValidationOptions& o) {
  cmd->add_option("--matrix", o.matrix,
                  "Validation matrix YAML (default: calibrate/data/validation_matrix.yaml)");
  cmd->add_option("--mode", o.mode, "The matrix's mode (default, short, full-size, ...)");
}

Registration reg(85, [](CLI::App& app) {
  auto o = std::make_shared<ValidationOptions>();
  auto* cmd = app.add_subcommand("validation", "The emulated-link validation's cases and report");
  cmd->require_subcommand(1);
  auto* cases = cmd->add_subcommand("cases", "Print one list of a mode's cases, one a line");
  add_common(cases, *o);
  cases->add_option("--list", o->list, "models, plans or delays")->required();
  cases->callback([o] { print_cases(*o); });
  auto* report = cmd->add_subcommand(
      "report", "Predicted against measured steps from validate-emulated.sh's work folder");
  add_common(report, *o);
  report->add_option("--work", o->work, "The script's work folder")->required();
  report->add_option("--models", o->models, "The models run, when not the mode's (space list)")
      ->delimiter(' ');
  report->add_option("--delays", o->delays, "The one-way delays run, when not the mode's")
      ->delimiter(' ');
  report->add_flag("--judge", o->judge, "Exit 1 when the mode misses its limit");
  report->callback([o] { print_report(*o); });
});

}  // namespace
}  // namespace fabtrain
