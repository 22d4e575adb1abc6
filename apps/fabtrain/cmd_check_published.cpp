// fabtrain check-published: the simulator, uncalibrated, against training runs others measured
// and published (calibrate/data/published_runs.yaml): predicted and measured step time (and peak
// memory where published) per run, and the median absolute error as the last line.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "calibrate/check_published.hpp"
#include "calibrate/plan_comparison.hpp"
#include "command.hpp"
#include "common/error.hpp"
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
    runs.push_back({{"id", c.id},
                    {"measured_step_s", c.measured_step_s},
                    {"predicted_step_s", c.predicted_step_s},
                    {"error", c.error},
                    {"oom", c.oom}});
    if (c.memory_error) runs.back()["memory_error"] = *c.memory_error;
    if (s.runs[i].framework_profile)
      runs.back()["framework_profile"] = s.runs[i].framework_profile->name;
  }
  nlohmann::json j = {
      {"runs", runs}, {"median_abs_error", s.median_abs_error}, {"problems", s.problems}};
  if (s.median_abs_memory_error) j["median_abs_memory_error"] = *s.median_abs_memory_error;
  return j;
}

void run(const CheckPublishedOptions& o) {
  const std::string path = o.file.empty() ? builtin_published_runs_path() : o.file;
  std::FILE* text = o.json.text();
  fmt::print(text, "published runs  {}\n", path);
  fmt::print(text,
             "simulated       uncalibrated (catalog compute defaults), each run's communicator "
             "profile and, where it names one, its framework profile\n\n");
  const PublishedSummary s = check_published(path);
  fmt::print(text, "{:<34} {:>4} {:<14} {:<44} {:>10} {:>10} {:>7}\n", "run", "GPUs", "GPU", "plan",
             "measured", "predicted", "error");
  for (std::size_t i = 0; i < s.checks.size(); ++i) {
    const PublishedRun& r = s.runs[i];
    const PublishedCheck& c = s.checks[i];
    fmt::print(text, "{:<34} {:>4} {:<14} {:<44} {:>9.3f}s {:>9.3f}s {:>+6.0f}%{}\n", r.id,
               r.hardware.gpus(), r.hardware.gpu, to_short_string(r.plan), c.measured_step_s,
               c.predicted_step_s, 100 * c.error, c.oom ? "  (predicted out of memory)" : "");
    if (c.memory_error)
      fmt::print(text, "{:<34} peak memory: measured {:.1f} GiB, predicted {:.1f} GiB ({:+.0f}%)\n",
                 "", *c.measured_memory_bytes / double(1 << 30),
                 *c.predicted_memory_bytes / double(1 << 30), 100 * *c.memory_error);
    if (std::abs(c.error) > 0.5)
      fmt::print(text, "{:<34} over 50%: {}\n", "",
                 r.large_error_reason.empty() ? "no reason stated in the data file"
                                              : r.large_error_reason);
  }
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
    fmt::print(text, "median absolute memory error {:.1f}% over {} published runs\n",
               100 * *s.median_abs_memory_error, s.memory_rows);
  fmt::print(text, "median absolute error {:.1f}% over {} published runs\n",
             100 * s.median_abs_error, s.checks.size());
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
  o->json.add_to(cmd, "every run's predicted and measured step and the median error");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
