// fabtrain validation cases|report|overlap: the emulated-link validation's data and its tables.
// `cases --mode M --list models|plans|delays|player|...` prints one of a mode's lists or run
// settings from the matrix (calibrate/data/validation_matrix.yaml), a word a line, for
// scripts/validate-emulated.sh to loop over; `report --mode M --work DIR` prints the tables from
// the script's work folder (calibrate/validation_report.hpp) and, with --judge, exits 1 when the
// mode misses its limit; `overlap --work DIR --models M --delays ... --plans ...` prints
// scripts/measure-overlap.sh's table of overlap off against on (calibrate/overlap_report.hpp).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "calibrate/overlap_report.hpp"
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
  OverlapReportInput overlap{{}, {}, {}, {}, "train"};
};

// A mode's list, or one of its run settings as a list of one.
std::vector<std::string> mode_list(const ValidationMode& mode, const std::string& list) {
  const ValidationRun& run = mode.run;
  if (list == "models") return mode.models;
  if (list == "plans") return mode.plans;
  if (list == "delays") return mode.delays;
  if (list == "full_size") return {mode.full_size ? "true" : "false"};
  if (list == "judged") return {mode.pass ? "true" : "false"};  // the mode has a limit
  if (list == "player") return {run.player};
  if (list == "steps") return {std::to_string(run.steps)};
  if (list == "seq") return {std::to_string(run.seq)};
  if (list == "batch") return {std::to_string(run.batch)};
  if (list == "link_mbit") return {std::to_string(run.link_mbit)};
  if (list == "device_type") return {run.device_type};
  if (list == "slice") return {run.slice};
  if (list == "nice") return {std::to_string(run.nice)};
  fail(
      "--list {}: expected models, plans, delays, full_size, judged, player, steps, seq, batch, "
      "device_type, slice, link_mbit or nice",
      list);
}

void print_cases(const ValidationOptions& o) {
  for (const std::string& item : mode_list(load_validation_mode(o.matrix, o.mode), o.list))
    fmt::print("{}\n", item);
}

void print_report(const ValidationOptions& o) {
  ValidationReportInput input{load_validation_mode(o.matrix, o.mode), o.work, o.judge};
  if (!o.models.empty()) input.mode.models = o.models;
  if (!o.delays.empty()) input.mode.delays = o.delays;
  const bool passed = print_validation_report(input, stdout);
  std::fflush(stdout);
  if (!passed) fail("validation mode {}: not passed (see above)", o.mode);
}

void print_overlap(const ValidationOptions& o) {
  const bool measured = print_overlap_report(o.overlap, stdout);
  std::fflush(stdout);
  if (!measured) fail("overlap: no case was measured in {}", o.overlap.work);
}

void add_overlap(CLI::App& validation, OverlapReportInput& in) {
  auto* cmd = validation.add_subcommand(
      "overlap", "Overlap off against on from measure-overlap.sh's validation work folder");
  cmd->add_option("--work", in.work, "The validation script's work folder")->required();
  cmd->add_option("--models", in.models, "The models run, built-ins or config.json (space list)")
      ->required()
      ->delimiter(' ');
  cmd->add_option("--delays", in.delays, "The one-way delays run, in ms (space list)")
      ->required()
      ->delimiter(' ');
  cmd->add_option("--plans", in.plans, "The plans run, each ending in ,overlap=off|on")
      ->required()
      ->delimiter(' ');
  cmd->add_option("--player", in.player, "train or replay (default train)");
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
  cases
      ->add_option("--list", o->list,
                   "models, plans, delays; full_size, judged (true or false); or a run "
                   "setting: player, steps, seq, batch, device_type, slice, link_mbit, nice")
      ->required();
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
  add_overlap(*cmd, o->overlap);
  cmd->get_subcommand("overlap")->callback([o] { print_overlap(*o); });
});

}  // namespace
}  // namespace fabtrain
