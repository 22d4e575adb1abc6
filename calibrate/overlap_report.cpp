// The overlap measurement's table (see overlap_report.hpp).
#include "calibrate/overlap_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "calibrate/validation_report.hpp"
#include "common/error.hpp"

namespace fabtrain {
namespace {

const std::string kOverlapKey = ",overlap=";

struct Row {
  std::string model, delay, base, mode;  // base: the plan without its overlap key; mode: off, on
};

Row row_of(const std::string& model, const std::string& plan, const std::string& delay) {
  const auto at = plan.rfind(kOverlapKey);
  const std::string mode = at == std::string::npos ? "" : plan.substr(at + kOverlapKey.size());
  if (mode != "off" && mode != "on")
    fail("--plans {}: expected the plan to end in ,overlap=off or ,overlap=on", plan);
  return {model, delay, plan.substr(0, at), mode};
}

class OverlapTable {
 public:
  OverlapTable(const OverlapReportInput& input, std::FILE* out) : in_(input), out_(out) {}

  // One row: measured, predicted, error, exposed communication and, for overlap=on, what it hid.
  void print_row(const Row& row) {
    const std::string run = run_record(row, row.mode);
    if (!std::filesystem::exists(run)) {
      fmt::print(out_, "{:>4} ms {:<28} {:>7}  not measured\n", row.delay, row.base, row.mode);
      return;
    }
    const MeasuredStep measured = measured_step(run);
    const double predicted =
        simulated_step_time(fmt::format("{}/sim-cal-bench-{}.json", in_.work, tag(row, row.mode)));
    const double error = (predicted - measured.step_s) / measured.step_s;
    errors_.push_back(std::abs(error));
    std::string exposed = fmt::format("{:.1f} ms", 1e3 * measured.exposed_comm_s), hidden;
    const std::string off = run_record(row, "off");
    if (row.mode == "on" && std::filesystem::exists(off)) {
      const MeasuredStep measured_off = measured_step(off);
      hidden = fmt::format("{:+.1f} ms", 1e3 * (measured_off.step_s - measured.step_s));
      exposed = fmt::format("{:.1f}/{:.1f} ms", 1e3 * measured.exposed_comm_s,
                            1e3 * measured_off.exposed_comm_s);
    }
    fmt::print(out_, "{:>4} ms {:<28} {:>7} {:>9.4f}s {:>9.4f}s {:>+6.1f}% {:>13} {:>9}\n",
               row.delay, row.base, row.mode, measured.step_s, predicted, 100 * error, exposed,
               hidden);
  }

  bool print_summary() const {
    fmt::print(out_,
               "(exposed comm: overlap=on's least waiting rank per step / overlap=off's; hidden: "
               "the measured step off minus on; predicted: bench-only calibration)\n");
    if (errors_.empty()) {
      fmt::print(out_, "overlap: no case was measured\n");
      return false;
    }
    double sum = 0;
    for (const double e : errors_) sum += e;
    fmt::print(out_, "overlap ({}): mean absolute percentage error {:.1f}% over {} cases\n",
               in_.player, 100 * sum / errors_.size(), errors_.size());
    return true;
  }

 private:
  // The work folder's tag of the row's plan with overlap=MODE.
  static std::string tag(const Row& row, const std::string& mode) {
    return validation_case_tag(validation_model_name(row.model), row.base + kOverlapKey + mode,
                               row.delay);
  }
  std::string run_record(const Row& row, const std::string& mode) const {
    return fmt::format("{}/run-{}.jsonl", in_.work, tag(row, mode));
  }

  const OverlapReportInput& in_;
  std::FILE* out_;
  std::vector<double> errors_;
};

}  // namespace

bool print_overlap_report(const OverlapReportInput& input, std::FILE* out) {
  if (input.player != "train" && input.player != "replay")
    fail("--player {}: expected train or replay", input.player);
  std::vector<Row> rows;  // every plan is checked before anything is printed
  for (const std::string& model : input.models)
    for (const std::string& delay : input.delays)
      for (const std::string& plan : input.plans) rows.push_back(row_of(model, plan, delay));
  fmt::print(out, "\nplayer: {} ({})\n", input.player,
             input.player == "replay" ? "compute slept, the catalog CPU time"
                                      : "the model trained on the CPU");
  fmt::print(out, "{:>6} {:<28} {:>7} {:>10} {:>10} {:>7} {:>13} {:>9}\n", "delay", "plan",
             "overlap", "measured", "predicted", "error", "exposed comm", "hidden");
  OverlapTable table(input, out);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (input.models.size() > 1 && (i == 0 || rows[i].model != rows[i - 1].model))
      fmt::print(out, "{}\n", validation_model_name(rows[i].model));
    table.print_row(rows[i]);
  }
  return table.print_summary();
}

}  // namespace fabtrain
