// Choosing the GPU count from the best plan of each GPU subset (see recommend.hpp).
#include "selector/recommend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/error.hpp"
#include "common/human_units.hpp"

namespace fabtrain {

Recommendation recommend(const SearchResult& result, const Slice& slice, double train_tokens,
                         double tolerance, Objective objective) {
  // 0 keeps only the fastest; below 0 (or NaN) no count qualifies, at 1 every count would.
  if (!(tolerance >= 0 && tolerance < 1))
    fail(
        "--tolerance {} must be at least 0 and below 1 (the fraction of the best throughput a "
        "smaller count may lose)",
        tolerance);
  Recommendation rec;
  std::map<std::vector<int>, size_t> by_subset;  // ranked is fastest first: first seen is best
  for (const auto& e : result.ranked) {
    const auto& gpus = e.candidate.subset.gpus;
    if (by_subset.count(gpus)) continue;
    by_subset[gpus] = rec.choices.size();
    CountChoice c;
    c.gpus = int(gpus.size());
    c.sites = e.candidate.subset.sites;
    c.best = e;
    c.time_to_train_s = train_tokens / e.tokens_per_s;
    c.gpu_hours = c.time_to_train_s * c.gpus / 3600;
    rec.choices.push_back(c);
  }
  std::stable_sort(rec.choices.begin(), rec.choices.end(), [](auto& a, auto& b) {
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    return a.time_to_train_s < b.time_to_train_s;
  });
  if (rec.choices.empty()) return rec;
  // Costs per token in the objective's terms (seconds, or GPU-seconds): lower is better; a
  // tight plan's raised by the tolerance, so a count whose best plan has headroom and comes
  // within the tolerance is chosen before it.
  auto cost = [&](const CountChoice& x) {
    const double c = objective_weight(objective, x.gpus) / x.best.tokens_per_s;
    return x.best.tight ? c * (1 + tolerance) : c;
  };
  size_t best = 0;
  for (size_t i = 0; i < rec.choices.size(); ++i)
    if (cost(rec.choices[i]) < cost(rec.choices[best])) best = i;
  const double ceiling = cost(rec.choices[best]) / (1 - tolerance);
  for (size_t i = 0; i < rec.choices.size(); ++i)
    if (cost(rec.choices[i]) <= ceiling) {
      rec.chosen = int(i);
      break;
    }
  const auto& c = rec.choices[rec.chosen];
  const auto& b = rec.choices[best];
  auto where = [&](const CountChoice& x) {
    return describe_gpus(slice, x.best.candidate.subset.gpus);
  };
  const char* measure = objective == Objective::gpu_hours ? "GPU-hours" : "time to train";
  if (size_t(rec.chosen) == best)
    rec.why = fmt::format("{} ({}) {} the least {}, and no smaller set comes within {:.0f}%",
                          counted(c.gpus, "GPU"), where(c), c.gpus == 1 ? "has" : "have", measure,
                          100 * tolerance);
  else
    rec.why = fmt::format(
        "{} ({}) reach{} {:.0f}% of the {}-GPU throughput ({}): {:.0f}% of its "
        "time to train with {:.0f}% of its GPU-hours, within the {:.0f}% tolerance "
        "on {}",
        counted(c.gpus, "GPU"), where(c), c.gpus == 1 ? "es" : "",
        100 * c.best.tokens_per_s / b.best.tokens_per_s, b.gpus, where(b),
        100 * c.time_to_train_s / b.time_to_train_s, 100 * c.gpu_hours / b.gpu_hours,
        100 * tolerance, measure);
  return rec;
}

}  // namespace fabtrain
