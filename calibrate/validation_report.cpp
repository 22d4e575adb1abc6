// The emulated-link validation's report (see validation_report.hpp).
#include "calibrate/validation_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/json_fields.hpp"
#include "common/strict_json.hpp"
#include "plan/chrome_trace.hpp"
#include "plan/run_record_format.hpp"
#include "plan/timeline.hpp"
#include "plan/verb.hpp"

namespace fabtrain {
namespace {

namespace fs = std::filesystem;
using RankSeconds = std::map<std::pair<std::string, int>, double>;  // (kind, rank) -> seconds

// The slowest rank's compute, the least waiting rank's communication.
KindSeconds per_kind(const RankSeconds& by_rank) {
  KindSeconds out;
  for (const auto& [key, seconds] : by_rank) {
    const auto [it, fresh] = out.emplace(key.first, seconds);
    if (!fresh)
      it->second =
          key.first == "comm" ? std::min(it->second, seconds) : std::max(it->second, seconds);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

nlohmann::json read_json(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) fail("{} {}: cannot read the file", what, path);
  return parse_json_strict(in, fmt::format("{} {}", what, path));
}

// A plan without its default keys, for the tables.
std::string brief(std::string plan) {
  for (const std::string d : {"tp=1,", "zero=0,", ",recompute=off", ",precision=fp32"})
    if (const auto at = plan.find(d); at != std::string::npos) plan.erase(at, d.size());
  return plan;
}

bool is_number(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

struct Case {
  std::string model, plan, delay;
  double predicted = 0, bench_only = 0, measured = 0;
  KindSeconds predicted_kinds, measured_kinds;
  double error() const { return (predicted - measured) / measured; }
  double bench_error() const { return (bench_only - measured) / measured; }
};

class Report {
 public:
  Report(const ValidationReportInput& input, std::FILE* out) : in_(input), out_(out) {}
  bool print();

 private:
  std::string file(const std::string& name) const { return in_.work + "/" + name; }
  std::string label(const std::string& delay) const;
  std::vector<std::string> plans_of(const std::string& model) const;
  void print_delay(const std::string& model, const std::string& delay);
  void print_kinds() const;
  void print_noise() const;
  void print_not_measured() const;
  void print_ratios() const;
  bool print_summary() const;
  void print_target(double mape, double bench_mape) const;
  std::vector<const Case*> cases_of(const std::string& model, const std::string& delay) const;

  const ValidationReportInput& in_;
  std::FILE* out_;
  std::size_t width_ = 24;
  std::vector<Case> cases_;
  std::vector<std::tuple<std::string, std::string, std::string>> not_measured_;
  int flips_ = 0, best_differs_ = 0, compared_ = 0;
};

std::string Report::label(const std::string& delay) const {
  if (!is_number(delay)) return delay;  // the sites' own path
  return in_.mode.full_size ? fmt::format("{:g} ms", 2 * std::stod(delay)) : delay + " ms";
}

std::vector<std::string> Report::plans_of(const std::string& model) const {
  const std::string path = file("plans-" + validation_model_name(model));
  std::ifstream in(path);
  if (!in) fail("{}: not found (is {} the work folder of validate-emulated.sh?)", path, in_.work);
  std::vector<std::string> plans;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) plans.push_back(line);
  return plans;
}

std::vector<const Case*> Report::cases_of(const std::string& model,
                                          const std::string& delay) const {
  std::vector<const Case*> out;
  for (const Case& c : cases_)
    if (c.model == model && c.delay == delay) out.push_back(&c);
  return out;
}

// One (model, delay): a row per measured plan, then whether the ranking agrees.
void Report::print_delay(const std::string& model, const std::string& delay) {
  const std::string name = validation_model_name(model);
  for (const std::string& plan : plans_of(model)) {
    const std::string t = validation_case_tag(name, plan, delay);
    if (!fs::exists(file("run-" + t + ".jsonl"))) {
      not_measured_.emplace_back(model, plan, delay);
      continue;
    }
    const MeasuredStep measured = measured_step(file("run-" + t + ".jsonl"));
    cases_.push_back({model, plan, delay, simulated_step_time(file("sim-cal-" + t + ".json")),
                      simulated_step_time(file("sim-cal-bench-" + t + ".json")), measured.step_s,
                      predicted_kinds(file("trace-cal-" + t + ".json")), measured.kinds});
    const Case& c = cases_.back();
    fmt::print(out_, "{:<13} {:>7} {:<{}} {:>9.4f}s {:>9.4f}s {:>+6.1f}%  {:>9.4f}s {:>+6.1f}%\n",
               name, label(delay), brief(plan), width_, c.predicted, c.measured, 100 * c.error(),
               c.bench_only, 100 * c.bench_error());
  }
  std::vector<const Case*> by_pred = cases_of(model, delay);
  if (by_pred.empty()) return;
  std::vector<const Case*> by_meas = by_pred;
  std::stable_sort(by_pred.begin(), by_pred.end(),
                   [](auto* a, auto* b) { return a->predicted < b->predicted; });
  std::stable_sort(by_meas.begin(), by_meas.end(),
                   [](auto* a, auto* b) { return a->measured < b->measured; });
  const auto order = [](const std::vector<const Case*>& cases) {
    std::string text;
    for (const Case* c : cases) text += (text.empty() ? "" : " < ") + brief(c->plan);
    return text;
  };
  const bool agree = by_pred == by_meas, same_best = by_pred[0] == by_meas[0];
  ++compared_;
  flips_ += !agree;
  best_differs_ += !same_best;
  fmt::print(out_, "{:<13} {:>7} ranking {}: predicted {}; measured {}; best plan {}\n", "",
             label(delay), agree ? "agrees" : "DIFFERS", order(by_pred), order(by_meas),
             same_best ? "same" : "DIFFERENT");
}

void Report::print_kinds() const {
  fmt::print(out_,
             "\nper instruction kind, seconds per step (compute: slowest rank; comm: least waiting "
             "rank): predicted / measured (error)\n");
  for (const Case& c : cases_) {
    std::string cells;
    for (const std::string kind : {"fwd", "bwd", "opt", "comm"}) {
      if (!c.predicted_kinds.count(kind) && !c.measured_kinds.count(kind)) continue;
      const double a = c.predicted_kinds.count(kind) ? c.predicted_kinds.at(kind) : 0;
      const double b = c.measured_kinds.count(kind) ? c.measured_kinds.at(kind) : 0;
      cells += fmt::format("{}{} {:.4f}/{:.4f}", cells.empty() ? "" : "  ", kind, a, b);
      if (b > 0) cells += fmt::format(" ({:+.0f}%)", 100 * (a - b) / b);
    }
    fmt::print(out_, "  {:<13} {:>7} {:<{}} {}\n", validation_model_name(c.model), label(c.delay),
               brief(c.plan), width_, cells);
  }
}

// Compute does not depend on the delay: its spread over the delays of one (model, plan) is the
// measurement's own noise (neighbours on the shared cores), a floor under any prediction error.
void Report::print_noise() const {
  std::vector<double> spread;
  for (const std::string& model : in_.mode.models)
    for (const std::string& plan : plans_of(model)) {
      std::vector<double> compute;
      for (const Case& c : cases_)
        if (c.model == model && c.plan == plan) {
          const auto s = [&](const char* k) {
            return c.measured_kinds.count(k) ? c.measured_kinds.at(k) : 0.0;
          };
          compute.push_back(s("fwd") + s("bwd"));
        }
      if (compute.size() < 2) continue;
      const auto [lo, hi] = std::minmax_element(compute.begin(), compute.end());
      const double mean = std::accumulate(compute.begin(), compute.end(), 0.0) / compute.size();
      spread.push_back((*hi - *lo) / mean);
    }
  if (spread.empty()) return;
  fmt::print(out_,
             "\nmeasured fwd+bwd seconds of one (model, plan) across the delays vary by {:.0f}% on "
             "average (max-min over mean; up to {:.0f}%): the noise floor of this machine\n",
             100 * std::accumulate(spread.begin(), spread.end(), 0.0) / spread.size(),
             100 * *std::max_element(spread.begin(), spread.end()));
}

void Report::print_not_measured() const {
  for (const auto& [model, plan, delay] : not_measured_) {
    const std::string skip =
        file("skip-" + validation_case_tag(validation_model_name(model), plan, delay) + ".txt");
    const std::string invalid = file("invalid-" + delay + ".txt");
    const std::string why = fs::exists(skip)      ? read_line(skip)
                            : fs::exists(invalid) ? "the run is not valid: " + read_line(invalid)
                                                  : "not placed";
    fmt::print(out_, "not measured: {} {} at {}: {}\n", validation_model_name(model), brief(plan),
               label(delay), why);
  }
}

// The mode's ratio of two plans' steps, measured and predicted, at every delay measuring both.
void Report::print_ratios() const {
  const ValidationMode& m = in_.mode;
  if (m.ratio_of.empty()) return;
  std::string lines, last;
  for (const std::string& model : m.models)
    for (const std::string& delay : m.delays) {
      const Case *of = nullptr, *over = nullptr;
      for (const Case* c : cases_of(model, delay)) {
        if (c->plan == m.ratio_of) of = c;
        if (c->plan == m.ratio_over) over = c;
      }
      if (!of || !over) continue;
      const double measured = of->measured / over->measured;
      const double bench = of->bench_only / over->bench_only,
                   runs = of->predicted / over->predicted;
      lines += fmt::format(
          "  {:<13} {:>7}: measured {:.2f}, predicted {:.2f} from the benches ({:+.0f}%), {:.2f} "
          "with the runs\n",
          validation_model_name(model), label(delay), measured, bench,
          100 * (bench - measured) / measured, runs);
      if (delay == m.delays.back())
        last += fmt::format(
            "{} at {}: measured {:.2f}, predicted {:.2f} ({}, bench only; {:.2f} with the runs)\n",
            m.ratio_name, label(delay), measured, bench, validation_model_name(model), runs);
    }
  if (lines.empty()) return;
  fmt::print(out_, "\n{} ({} over {}), step time ratio:\n{}{}", m.ratio_name, brief(m.ratio_of),
             brief(m.ratio_over), lines, last);
}

// The mean errors, the rankings, and the verdict: invalid delays and a judged mode's limit.
bool Report::print_summary() const {
  if (cases_.empty()) {
    fmt::print(out_, "no case was measured validly\n");
    return false;
  }
  double sum = 0, bench_sum = 0;
  for (const Case& c : cases_) sum += std::abs(c.error()), bench_sum += std::abs(c.bench_error());
  const double mape = 100 * sum / cases_.size(), bench_mape = 100 * bench_sum / cases_.size();
  fmt::print(out_,
             "\nmean absolute percentage error {:.1f}% over {} cases (bench only: {:.1f}%); "
             "rankings agree at {} of {} (model, delay); best plan same at {} of {}\n",
             mape, cases_.size(), bench_mape, compared_ - flips_, compared_,
             compared_ - best_differs_, compared_);
  print_target(mape, bench_mape);
  std::string invalid;
  for (const std::string& d : in_.mode.delays)
    if (fs::exists(file("invalid-" + d + ".txt")))
      invalid += (invalid.empty() ? "" : ", ") + label(d);
  if (!invalid.empty()) {
    fmt::print(out_,
               "NOT VALID at {}: the emulator could not carry the link on time (see above); the "
               "other delays are valid\n",
               invalid);
    return false;
  }
  if (!in_.judge || !in_.mode.pass) return true;
  const ValidationPass& pass = *in_.mode.pass;
  const double error = pass.bench_only ? bench_mape : mape;
  if (error <= pass.max_error_pct && (!pass.ranking_agrees || flips_ == 0)) return true;
  fmt::print(out_, "FAIL: validation mode {} needs {}error <= {:g}%{}\n", in_.mode.name,
             pass.bench_only ? "bench-only " : "", pass.max_error_pct,
             pass.ranking_agrees ? " and no ranking flip" : "");
  return false;
}

// A mode with a limit: the limit over the error, and the rankings that agree over those compared,
// as ratio lines (>= 1 meets the target), whether or not the report judges.
void Report::print_target(double mape, double bench_mape) const {
  if (!in_.mode.pass) return;
  const ValidationPass& pass = *in_.mode.pass;
  const double error = pass.bench_only ? bench_mape : mape;
  fmt::print(out_, "ratio (target {}error {:g}% / measured {:.1f}%): {:.2f}\n",
             pass.bench_only ? "bench-only " : "", pass.max_error_pct, error,
             error > 0 ? pass.max_error_pct / error : HUGE_VAL);  // no error: any target met
  if (pass.ranking_agrees && compared_ > 0)
    fmt::print(out_, "ratio (rankings agreeing / compared, target all): {:.2f}\n",
               double(compared_ - flips_) / compared_);
}

bool Report::print() {
  for (const std::string& model : in_.mode.models)
    for (const std::string& plan : plans_of(model)) width_ = std::max(width_, brief(plan).size());
  const bool full = in_.mode.full_size;
  fmt::print(out_, "\n{:<13} {:>7} {:<{}} {:>10} {:>10} {:>7}  {:>10} {:>7}\n", "model",
             full ? "rtt" : "delay", "plan", width_, "predicted", "measured", "error", "bench-only",
             "error");
  for (const std::string& model : in_.mode.models)
    for (const std::string& delay : in_.mode.delays) print_delay(model, delay);
  print_kinds();
  print_noise();
  print_not_measured();
  print_ratios();
  return print_summary();
}

}  // namespace

MeasuredStep measured_step(const std::string& path) {
  const RunRecordFile record = read_run_record_file(path);
  if (record.steps.empty()) fail("run record {}: no step", path);
  const std::size_t first = record.steps.size() > 1 ? 1 : 0;  // the first opens the connections
  const double count = double(record.steps.size() - first);
  MeasuredStep measured;
  std::vector<double> walls, exposed;
  for (std::size_t s = first; s < record.steps.size(); ++s) {
    walls.push_back(record.steps[s].summary.wall_s);
    RankSeconds by_rank;
    for (const InstructionRecord& i : record.steps[s].instructions)
      by_rank[{i.communication ? "comm" : i.kind, i.rank}] += i.duration_s;
    const KindSeconds kinds = per_kind(by_rank);
    for (const auto& [kind, seconds] : kinds) measured.kinds[kind] += seconds / count;
    exposed.push_back(kinds.count("comm") ? kinds.at("comm") : 0.0);
  }
  measured.step_s = median(walls);
  measured.exposed_comm_s = median(exposed);
  return measured;
}

std::string validation_model_name(const std::string& model) {
  const fs::path p(model);
  return p.extension() == ".json" ? p.parent_path().filename().string() : model;
}

std::string validation_case_tag(const std::string& model_name, std::string plan,
                                const std::string& delay) {
  std::replace_if(
      plan.begin(), plan.end(), [](char c) { return c == ',' || c == '=' || c == ':'; }, '_');
  return fmt::format("{}-{}-{}", model_name, plan, delay);
}

double simulated_step_time(const std::string& path) {
  return json_fields::number(read_json(path, "simulation"), "step_time_s", "top", path);
}

KindSeconds predicted_kinds(const std::string& path) {
  RankSeconds by_rank;
  for (const TraceSpan& s : trace_spans(read_json(path, "trace"), path))
    if (s.lane != kSendsInFlightLane)
      by_rank[{is_communication_verb(s.verb) ? "comm" : canonical_verb(s.verb), s.rank}] +=
          s.seconds;
  return per_kind(by_rank);
}

bool print_validation_report(const ValidationReportInput& input, std::FILE* out) {
  return Report(input, out).print();
}

}  // namespace fabtrain
