// fabtrain check-published: the simulator, uncalibrated, against training runs others measured
// and published (calibrate/data/published_runs.yaml): predicted and measured step time per run,
// peak memory of the kind each source measured, and whether each run the source says ran out of
// memory (or ran) is predicted so; the medians and the agreement as the last lines.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "calibrate/check_published.hpp"
#include "calibrate/plan_comparison.hpp"
#include "command.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "json_output.hpp"

namespace fabtrain {
namespace {

struct CheckPublishedOptions {
  std::string file;
  JsonOutput json;
};

nlohmann::json to_json(const PublishedSummary& s) {
  nlohmann::json runs = nlohmann::json::array();
  for (std::size_t i = 0; i < s.checks.size(); ++i) {
    const PublishedCheck& c = s.checks[i];
    runs.push_back({{"id", c.id}, {"oom", c.oom}});
    if (c.timed) {
      runs.back()["measured_step_s"] = c.measured_step_s;
      runs.back()["predicted_step_s"] = c.predicted_step_s;
      runs.back()["error"] = c.error;
    }
    if (c.memory_error) {
      runs.back()["memory_kind"] = to_string(s.runs[i].measured.memory_kind);
      runs.back()["measured_memory_bytes"] = *c.measured_memory_bytes;
      runs.back()["predicted_memory_bytes"] = *c.predicted_memory_bytes;
      runs.back()["memory_error"] = *c.memory_error;
    }
    if (c.measured_oom) runs.back()["measured_oom"] = *c.measured_oom;
    if (s.runs[i].framework_profile)
      runs.back()["framework_profile"] = s.runs[i].framework_profile->name;
  }
  nlohmann::json j = {{"runs", runs},
                      {"median_abs_error", s.median_abs_error},
                      {"timed_rows", s.timed_rows},
                      {"memory_rows", s.memory_rows},
                      {"oom_rows", s.oom_rows},
                      {"oom_agreeing", s.oom_agreeing},
                      {"problems", s.problems}};
  if (s.median_abs_memory_error) j["median_abs_memory_error"] = *s.median_abs_memory_error;
  return j;
}

constexpr double kGiB = double(1 << 30);

void print_step_times(std::FILE* text, const PublishedSummary& s) {
  fmt::print(text, "{:<34} {:>4} {:<14} {:<44} {:>10} {:>10} {:>7}\n", "run", "GPUs", "GPU", "plan",
             "measured", "predicted", "error");
  for (std::size_t i = 0; i < s.checks.size(); ++i) {
    const PublishedRun& r = s.runs[i];
    const PublishedCheck& c = s.checks[i];
    if (!c.timed) continue;
    fmt::print(text, "{:<34} {:>4} {:<14} {:<44} {:>9.3f}s {:>9.3f}s {:>+6.0f}%{}\n", r.id,
               r.hardware.gpus(), r.hardware.gpu, to_short_string(r.plan), c.measured_step_s,
               c.predicted_step_s, 100 * c.error, c.oom ? "  (predicted out of memory)" : "");
    if (std::abs(c.error) > 0.5)
      fmt::print(text, "{:<34} over 50%: {}\n", "",
                 r.large_error_reason.empty() ? "no reason stated in the data file"
                                              : r.large_error_reason);
  }
}

// Peak memory per GPU of the kind each source measured, and the out-of-memory verdicts.
void print_memory(std::FILE* text, const PublishedSummary& s) {
  fmt::print(text, "\npeak memory per GPU (the kind the source measured; GiB)\n");
  fmt::print(text, "{:<40} {:<14} {:<36} {:<11} {:>8} {:>9} {:>7}\n", "run", "GPU", "plan", "kind",
             "measured", "predicted", "error");
  for (std::size_t i = 0; i < s.checks.size(); ++i) {
    const PublishedRun& r = s.runs[i];
    const PublishedCheck& c = s.checks[i];
    if (!c.memory_error) continue;
    fmt::print(text, "{:<40} {:<14} {:<36} {:<11} {:>8.2f} {:>9.2f} {:>+6.0f}%\n", r.id,
               r.hardware.gpu, to_short_string(r.plan), to_string(r.measured.memory_kind),
               *c.measured_memory_bytes / kGiB, *c.predicted_memory_bytes / kGiB,
               100 * *c.memory_error);
  }
  fmt::print(text, "\nout of memory, as the source says and as predicted\n");
  for (std::size_t i = 0; i < s.checks.size(); ++i) {
    const PublishedCheck& c = s.checks[i];
    if (!c.measured_oom) continue;
    fmt::print(text, "  {:<40} {:<36} source: {:<13} predicted: {:<13} {}\n", c.id,
               to_short_string(s.runs[i].plan), *c.measured_oom ? "out of memory" : "ran",
               c.oom ? "out of memory" : "fits", c.oom_agrees() ? "agree" : "DISAGREE");
  }
}

void run(const CheckPublishedOptions& o) {
  const std::string path = o.file.empty() ? builtin_published_runs_path() : o.file;
  std::FILE* text = o.json.text();
  fmt::print(text, "published runs  {}\n", path);
  fmt::print(text,
             "simulated       uncalibrated (catalog compute defaults), each run's communicator "
             "profile and, where it names them, its framework and framework memory profiles\n\n");
  const PublishedSummary s = check_published(path);
  print_step_times(text, s);
  print_memory(text, s);
  for (const auto& p : s.problems) fmt::print(stderr, "bad row: {}\n", p);
  const std::vector<PlanComparison> comparisons = compare_plans(s.runs, s.checks);
  if (!comparisons.empty())
    fmt::print(text,
               "\nplans compared on the same hardware (fastest: most sequences per second)\n");
  for (const PlanComparison& c : comparisons)
    fmt::print(text, "  {:<32} measured fastest {}, predicted fastest {}: {}\n", c.group,
               c.best_measured, c.best_predicted, c.agree() ? "agree" : "DISAGREE");
  if (!comparisons.empty())
    fmt::print(text, "best plan predicted = best measured in {} of {} comparisons\n",
               agreeing(comparisons), comparisons.size());
  fmt::print(text, "\n");
  if (s.median_abs_memory_error)
    fmt::print(text, "median absolute memory error {:.1f}% over {}\n",
               100 * *s.median_abs_memory_error, counted(s.memory_rows, "published peak"));
  if (s.oom_rows > 0)
    fmt::print(text,
               "out of memory or not: predicted as the source says in {} of {} published runs\n",
               s.oom_agreeing, s.oom_rows);
  fmt::print(text, "median absolute error {:.1f}% over {}\n", 100 * s.median_abs_error,
             counted(s.timed_rows, "published run"));
  o.json.write(to_json(s));
  std::fflush(stdout);
  if (!s.problems.empty())
    fail("{} of {} rows of {} were not checked (listed above)", s.problems.size(), s.rows, path);
}

Registration reg(75, [](CLI::App& app) {
  auto o = std::make_shared<CheckPublishedOptions>();
  auto* cmd = app.add_subcommand(
      "check-published",
      "Check the simulator, uncalibrated, against published measured training runs");
  cmd->add_option("--file", o->file,
                  "Published runs YAML (default: calibrate/data/published_runs.yaml)");
  o->json.add_to(cmd,
                 "every run's predicted and measured step, memory and out-of-memory verdict, and "
                 "the medians");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
