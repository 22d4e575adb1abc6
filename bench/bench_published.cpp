// The simulator against published measurements: the median absolute error of the predicted step
// time, uncalibrated, over the runs of calibrate/data/published_runs.yaml (target <= 15%, goal
// 10%), and the rows off by more than 50%. Not a timing benchmark: the figure is an accuracy. The
// per-row table is `fabtrain check-published`.
#include <fmt/format.h>

#include <cmath>

#include "calibrate/check_published.hpp"
#include "calibrate/plan_comparison.hpp"

using namespace fabtrain;

int main() {
  const std::string path = builtin_published_runs_path();
  const PublishedSummary s = check_published(path);
  int over_half = 0;
  for (const auto& c : s.checks) over_half += std::fabs(c.error) > 0.5;
  fmt::print("published runs: {} rows, {} simulated, {} not checked ({})\n", s.rows,
             s.checks.size(), s.problems.size(), path);
  for (const auto& p : s.problems) fmt::print("  bad row: {}\n", p);
  fmt::print("rows off by more than 50%: {}\n", over_half);
  const std::vector<PlanComparison> comparisons = compare_plans(s.runs, s.checks);
  fmt::print("best plan predicted = best measured in {} of {} comparisons\n", agreeing(comparisons),
             comparisons.size());
  fmt::print("median absolute error {:.1f}% over {} published runs\n", 100 * s.median_abs_error,
             s.checks.size());
  const double ratio = s.median_abs_error > 0 ? 0.15 / s.median_abs_error : 0;
  fmt::print("ratio (target median error 15% / measured {:.1f}%): {:.2f}\n",
             100 * s.median_abs_error, ratio);
  return s.problems.empty() ? 0 : 1;
}
