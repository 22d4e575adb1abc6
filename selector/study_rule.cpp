// The study's selection procedure over its four techniques (see study_rule.hpp).
#include "selector/study_rule.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "plan/default_batch.hpp"

namespace fabtrain {
namespace {

int gpus_per_site(const Slice& slice, const GpuSubset& subset, const std::string& site) {
  const auto all = slice.gpus();
  return int(std::count_if(subset.gpus.begin(), subset.gpus.end(),
                           [&](int g) { return slice.vms[all[g].vm].site == site; }));
}

const Evaluated* find(const SearchResult& r, const std::string& technique) {
  for (const auto& e : r.ranked)
    if (technique_name(e.candidate.plan) == technique) return &e;
  return nullptr;
}

}  // namespace

std::vector<Candidate> study_techniques(const ModelSpec& model, const Slice& slice,
                                        const GpuSubset& subset, const SearchSpace& space) {
  const int n = int(subset.gpus.size());
  // One batch for every technique of n GPUs, as the study compares them: a plan whose dp*mb does
  // not divide it is not a candidate (its own default batch would be larger).
  const int B = space.global_batch > 0 ? space.global_batch : default_batch_for_gpus(n);
  std::vector<Candidate> out;
  auto add = [&](Plan plan) {
    plan.devices = subset.gpus;
    plan.precision = precision_on(slice, subset.gpus, space);
    try {
      validate(plan, model, B);
      out.push_back({plan, B, subset});
    } catch (const Error&) {
    }
  };
  // Each technique with gradient accumulation over a few microbatch counts (Alpa's
  // num_micro_batches), so that the batch can fit; the fastest that fits represents it.
  for (int mb : {1, 2, 4, 8, 16}) {
    add(Plan{.dp = n, .mb = mb});
    if (n > 1) add(Plan{.dp = n, .mb = mb, .zero = 2});
    if (n > 1) add(Plan{.tp = n, .mb = mb});
  }
  // Pipeshard: one stage per site; on one site two stages. Shard (tp) inside a stage when the
  // heads allow, else data parallel inside. Alpa's default microbatching: try a few, keep all.
  const int stages = subset.sites.size() > 1 ? int(subset.sites.size()) : 2;
  if (n >= stages && n % stages == 0) {
    const int per_stage = n / stages;
    bool even = true;
    for (const auto& s : subset.sites)
      even = even && (subset.sites.size() == 1 || gpus_per_site(slice, subset, s) == per_stage);
    if (even)
      for (int mb : {4, 8, 16}) {
        Plan p{.pp = stages, .mb = mb};
        if (model.n_head % per_stage == 0)
          p.tp = per_stage;
        else
          p.dp = per_stage;
        add(p);
      }
  }
  return out;
}

RuleDecision study_rule(const ModelSpec& model, const Slice& slice, const SearchOptions& options,
                        double tolerance) {
  RuleDecision d;
  const auto subsets = gpu_subsets(slice, true);
  // A copy: the second branch is an element of a temporary vector.
  const GpuSubset all = subsets.back().gpus.size() == size_t(slice.gpu_count())
                            ? subsets.back()
                            : gpu_subsets(slice, false).front();
  const SearchResult r = evaluate(model, slice, study_techniques(model, slice, all, options.space),
                                  every_plan(options));
  const bool one_site = all.sites.size() == 1;
  const Evaluated* pick = nullptr;
  if (one_site) {
    const Evaluated* dp = find(r, "data parallel");
    const Evaluated* shard = find(r, "shard");
    d.steps.push_back(fmt::format("one site ({}): data parallel {}, shard {}", all.sites[0],
                                  dp ? "fits" : "does not fit", shard ? "fits" : "does not fit"));
    if (dp && shard)
      pick = dp->tokens_per_s >= shard->tokens_per_s ? dp : shard;
    else
      pick = dp ? dp : shard;
  } else {
    pick = find(r, "pipeshard");
    d.steps.push_back(
        fmt::format("{} sites: pipeshard {}", all.sites.size(), pick ? "fits" : "does not fit"));
  }
  if (!pick) {
    pick = find(r, "ZeRO-2");
    d.steps.push_back(fmt::format("short on memory: ZeRO-2 {}", pick ? "fits" : "does not fit"));
  }
  if (!pick) return d;
  d.found = true;
  d.chosen = *pick;

  // Prefer fewer GPUs: the same rule on each single site's GPUs, if within tolerance.
  if (!one_site) {
    for (const auto& subset : subsets) {
      if (subset.sites.size() != 1) continue;
      if (gpus_per_site(slice, subset, subset.sites[0]) !=
          gpus_per_site(slice, all, subset.sites[0]))
        continue;  // only a whole site
      const SearchResult s = evaluate(
          model, slice, study_techniques(model, slice, subset, options.space), every_plan(options));
      const Evaluated* best = s.ranked.empty() ? nullptr : &s.ranked.front();
      if (best && best->tokens_per_s >= (1 - tolerance) * d.chosen.tokens_per_s) {
        d.steps.push_back(fmt::format(
            "fewer GPUs: {} GPUs at {} reach {:.0f}% of the throughput: use them",
            subset.gpus.size(), subset.sites[0], 100 * best->tokens_per_s / d.chosen.tokens_per_s));
        d.chosen = *best;
        break;
      }
    }
  }
  d.technique = technique_name(d.chosen.candidate.plan);
  return d;
}

}  // namespace fabtrain
