// Choosing the GPU count from the best plan of each GPU subset (see recommend.hpp).
#include "selector/recommend.hpp"

#include <algorithm>
#include <fmt/format.h>

#include <map>

#include "common/error.hpp"

namespace fabtrain {

Recommendation recommend(const SearchResult& result, const Slice& slice, double train_tokens,
                         double tolerance) {
  // 0 keeps only the fastest; below 0 (or NaN) no count qualifies, at 1 every count would.
  if (!(tolerance >= 0 && tolerance < 1))
    fail("--tolerance {} must be at least 0 and below 1 (the fraction of the best throughput a "
         "smaller count may lose)", tolerance);
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
  size_t best = 0;
  for (size_t i = 0; i < rec.choices.size(); ++i)
    if (rec.choices[i].best.tokens_per_s > rec.choices[best].best.tokens_per_s) best = i;
  const double floor = (1 - tolerance) * rec.choices[best].best.tokens_per_s;
  for (size_t i = 0; i < rec.choices.size(); ++i)
    if (rec.choices[i].best.tokens_per_s >= floor) {
      rec.chosen = int(i);
      break;
    }
  const auto& c = rec.choices[rec.chosen];
  const auto& b = rec.choices[best];
  auto where = [&](const CountChoice& x) {
    return describe_gpus(slice, x.best.candidate.subset.gpus);
  };
  if (size_t(rec.chosen) == best)
    rec.why = fmt::format("{} GPUs ({}) are the fastest, and no smaller set comes within {:.0f}%",
                          c.gpus, where(c), 100 * tolerance);
  else
    rec.why = fmt::format("{} GPUs ({}) reach {:.0f}% of the {}-GPU throughput ({}) with {:.0f}% of "
                          "the GPU-hours",
                          c.gpus, where(c), 100 * c.best.tokens_per_s / b.best.tokens_per_s, b.gpus,
                          where(b), 100 * c.gpu_hours / b.gpu_hours);
  return rec;
}

}  // namespace fabtrain
