// Enumerating the search space: GPU subsets, factorisations, microbatches, layer splits.
#include "selector/enumerate.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "common/error.hpp"
#include "plan/default_batch.hpp"
#include "selector/site_sets.hpp"

namespace fabtrain {

bool count_tried(std::size_t take, std::size_t largest) {
  if (take <= std::size_t(kEveryCountUpTo) || take == largest) return true;
  std::size_t octave = 1;  // the power of two at or below take
  while (octave * 2 <= take) octave *= 2;
  const std::size_t step = std::max<std::size_t>(1, octave / kCountsPerOctave);
  return take % step == 0;
}

std::vector<GpuSubset> gpu_subsets_of(const Slice& slice, const std::vector<std::string>& sites) {
  const auto gpus = slice.gpus();
  // The chosen sites' GPUs per site; the first k of every site for k = 1, 2, ..., so that
  // multi-site subsets stay balanced across sites.
  std::vector<std::vector<int>> per_site(sites.size());
  for (const auto& g : gpus)
    for (size_t s = 0; s < sites.size(); ++s)
      if (slice.vms[g.vm].site == sites[s]) per_site[s].push_back(g.index);
  size_t largest = 0;
  for (const auto& v : per_site) largest = std::max(largest, v.size());
  std::vector<GpuSubset> out;
  for (size_t take = 1; take <= largest; ++take) {
    if (!count_tried(take, largest)) continue;
    GpuSubset subset{{}, sites};
    for (const auto& v : per_site)
      for (size_t i = 0; i < std::min(take, v.size()); ++i) subset.gpus.push_back(v[i]);
    std::sort(subset.gpus.begin(), subset.gpus.end());
    if (!out.empty() && out.back().gpus == subset.gpus) continue;
    out.push_back(subset);
  }
  return out;
}

std::vector<GpuSubset> gpu_subsets(const Slice& slice, bool all_subsets) {
  if (!all_subsets) {
    GpuSubset all{{}, slice.site_names()};
    for (const auto& g : slice.gpus()) all.gpus.push_back(g.index);
    return {all};
  }
  std::vector<GpuSubset> out;
  for (const auto& set : site_sets(slice, nullptr, false).sets)
    for (auto& subset : gpu_subsets_of(slice, set)) out.push_back(std::move(subset));
  return out;
}

static double gpu_peak(const GpuType& type, Precision p) {
  switch (p) {
    case Precision::fp32:
      return type.peak_fp32_flops;
    case Precision::fp16:
      return type.peak_fp16_flops;
    case Precision::bf16:
      return type.peak_bf16_flops;
    case Precision::tf32:
      return type.peak_tf32_flops;
  }
  return type.peak_fp32_flops;
}

bool has_precision(const GpuType& type, Precision precision) {
  return gpu_peak(type, precision) > 0;
}

Precision precision_on(const Slice& slice, const std::vector<int>& gpus, const SearchSpace& space) {
  if (!space.precision_where_supported) return space.precision;
  const auto all = slice.gpus();
  for (int g : gpus)
    if (!has_precision(*all.at(g).type, space.precision)) return Precision::fp32;
  return space.precision;
}

std::vector<int> balanced_layers(const ModelSpec& model, const Slice& slice,
                                 const std::vector<int>& devices, const Plan& plan) {
  const auto gpus = slice.gpus();
  std::vector<double> speed(plan.pp, 0);
  for (int rank = 0; rank < plan.ranks(); ++rank) {
    const double peak = gpu_peak(*gpus[devices[rank]].type, plan.precision);
    double& s = speed[rank_coord(plan, rank).pp];
    s = s == 0 ? peak : std::min(s, peak);
  }
  if (std::all_of(speed.begin(), speed.end(), [&](double s) { return s == speed[0]; })) return {};
  const double total = std::accumulate(speed.begin(), speed.end(), 0.0);
  const int L = model.n_layer;
  std::vector<int> layers(plan.pp, 1);  // at least one each
  int left = L - plan.pp;
  std::vector<std::pair<double, int>> remainders;
  for (int s = 0; s < plan.pp; ++s) {
    const double share = left * speed[s] / total;
    layers[s] += int(std::floor(share));
    remainders.push_back({share - std::floor(share), s});
  }
  int assigned = std::accumulate(layers.begin(), layers.end(), 0);
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; assigned < L; ++i, ++assigned)
    ++layers[remainders[i % remainders.size()].second];
  return layers;
}

// The candidate (overlap on, 25 MiB buckets) and, where it communicates, its overlap=off twin
// and, with dp > 1, its large-bucket twin.
static std::vector<Candidate> overlap_variants(const Candidate& c, const SearchSpace& space) {
  std::vector<Candidate> out{c};
  if (!space.overlap_variants || (c.plan.dp == 1 && c.plan.pp == 1)) return out;
  if (c.plan.dp > 1) {
    out.push_back(c);
    out.back().plan.bucket_mib = kLargeBucketMib;
  }
  out.push_back(c);
  out.back().plan.overlap = false;
  return out;
}

// The candidate with the even layer split and, where the stages differ in speed, the balanced
// one; each with its overlap variants.
static void add_splits_and_variants(const ModelSpec& model, const Slice& slice, const Candidate& c,
                                    const SearchSpace& space, std::vector<Candidate>& out) {
  std::vector<Candidate> split{c};
  if (c.plan.pp > 1) {
    auto balanced = balanced_layers(model, slice, c.subset.gpus, c.plan);
    if (!balanced.empty()) {
      split.push_back(c);
      split.back().plan.layers = balanced;
    }
  }
  for (const Candidate& one : split)
    for (const Candidate& variant : overlap_variants(one, space)) out.push_back(variant);
}

static std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

std::vector<Candidate> plans_on(const ModelSpec& model, const Slice& slice, const GpuSubset& subset,
                                const SearchSpace& space) {
  std::vector<Candidate> out;
  const int n = int(subset.gpus.size());
  const int B = space.global_batch > 0 ? space.global_batch : default_batch_for_gpus(n);
  const Precision precision = precision_on(slice, subset.gpus, space);
  for (int tp : divisors(n)) {
    if (model.n_head % tp != 0) continue;
    for (int pp : divisors(n / tp)) {
      if (pp > model.n_layer) continue;
      const int dp = n / tp / pp;
      if (B % dp != 0) continue;
      for (int mb : divisors(B / dp)) {
        if (mb > space.max_microbatches) break;
        // Without a pipeline, microbatches are gradient accumulation: slower, but how a large
        // batch fits, so they stay in the space.
        for (int zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero)
          for (auto schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::gpipe}) {
            if (pp == 1 && schedule == PipelineSchedule::gpipe) continue;
            for (bool recompute : {false, true}) {
              Plan plan;
              plan.dp = dp, plan.tp = tp, plan.pp = pp, plan.mb = mb, plan.zero = zero;
              plan.schedule = schedule;
              plan.recompute = recompute;
              plan.precision = precision;
              plan.devices = subset.gpus;
              // B is dp*mb's multiple here (mb divides B/dp), so a plan's default batch is B:
              // `fabtrain simulate --plan` of a candidate plays the step the search played.
              const Candidate c{plan, space.global_batch > 0 ? B : default_global_batch(plan),
                                subset};
              add_splits_and_variants(model, slice, c, space, out);
            }
          }
      }
    }
  }
  std::vector<Candidate> valid;
  valid.reserve(out.size());
  for (auto& c : out) {
    try {
      validate(c.plan, model, c.global_batch);
      valid.push_back(std::move(c));
    } catch (const Error&) {
      // Combinations the rules reject are not part of the space.
    }
  }
  return valid;
}

std::vector<Candidate> enumerate_plans(const ModelSpec& model, const Slice& slice,
                                       const SearchSpace& space) {
  std::vector<Candidate> out;
  for (const auto& subset : gpu_subsets(slice, space.all_subsets))
    for (auto& c : plans_on(model, slice, subset, space)) out.push_back(std::move(c));
  return out;
}

}  // namespace fabtrain
