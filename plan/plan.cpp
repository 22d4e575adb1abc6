// A Plan's shape: its layer split over pipeline stages, the block range of each stage, the
// placement of ranks (Megatron's order: tp innermost, then dp, then pp) and the checks against a
// model and a batch. Not here: text forms (plan_text.cpp) or the schedule (compile.cpp).
#include "plan/plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "common/error.hpp"

namespace fabtrain {

std::vector<int> stage_layers(const ModelSpec& model, const Plan& plan) {
  const int L = model.n_layer;
  if (plan.pp < 1) fail("pp={} must be at least 1", plan.pp);
  if (plan.layers.empty()) {
    if (plan.pp > L) fail("pp={} exceeds the {} layers of {}", plan.pp, L, model.name);
    std::vector<int> split(plan.pp, L / plan.pp);
    for (int i = 0; i < L % plan.pp; ++i) ++split[i];  // earlier stages take the remainder
    return split;
  }
  if (int(plan.layers.size()) != plan.pp)
    fail("layers={} has {} stages but pp={}", fmt::join(plan.layers, ":"), plan.layers.size(),
         plan.pp);
  int sum = 0;
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i] < 1)
      fail("layers={}: stage {} has {} layers (each stage needs at least 1)",
           fmt::join(plan.layers, ":"), i, plan.layers[i]);
    sum += plan.layers[i];
  }
  if (sum != L)
    fail("layers={} sums to {} but {} has {} layers", fmt::join(plan.layers, ":"), sum, model.name,
         L);
  return plan.layers;
}

std::vector<BlockRange> stage_blocks(const ModelSpec& model, const Plan& plan) {
  const std::vector<int> layers = stage_layers(model, plan);
  std::vector<BlockRange> ranges;
  int first_layer = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const bool first = i == 0, last = i + 1 == layers.size();
    BlockRange r;
    r.begin = first ? 0 : first_block_of_layer(first_layer);
    first_layer += layers[i];
    r.end = last ? block_count(model) : first_block_of_layer(first_layer);
    ranges.push_back(r);
  }
  return ranges;
}

int split_of(const Plan& plan, Block block) {
  return replicated_over_tp(block) && !plan.vocab_parallel ? 1 : plan.tp;
}

double tied_copy_parameters(const ModelSpec& model, const Plan& plan) {
  return double(model.vocab_size) * model.n_embd / (plan.vocab_parallel ? plan.tp : 1);
}

RankCoord rank_coord(const Plan& plan, int rank) {
  if (rank < 0 || rank >= plan.ranks())
    fail("rank {} out of range for a plan of {} ranks", rank, plan.ranks());
  RankCoord c;
  c.tp = rank % plan.tp;
  c.dp = (rank / plan.tp) % plan.dp;
  c.pp = rank / (plan.tp * plan.dp);
  return c;
}

int rank_of(const Plan& plan, RankCoord c) {
  if (c.tp < 0 || c.tp >= plan.tp || c.dp < 0 || c.dp >= plan.dp || c.pp < 0 || c.pp >= plan.pp)
    fail("coordinate dp={},tp={},pp={} outside the plan's dp={},tp={},pp={}", c.dp, c.tp, c.pp,
         plan.dp, plan.tp, plan.pp);
  return c.tp + plan.tp * (c.dp + plan.dp * c.pp);
}

std::vector<int> tp_group(const Plan& plan, int rank) {
  RankCoord c = rank_coord(plan, rank);
  std::vector<int> group;
  for (c.tp = 0; c.tp < plan.tp; ++c.tp) group.push_back(rank_of(plan, c));
  return group;
}

std::vector<int> dp_group(const Plan& plan, int rank) {
  RankCoord c = rank_coord(plan, rank);
  std::vector<int> group;
  for (c.dp = 0; c.dp < plan.dp; ++c.dp) group.push_back(rank_of(plan, c));
  return group;
}

int device_of(const Plan& plan, int rank) {
  if (rank < 0 || rank >= plan.ranks())
    fail("rank {} out of range for a plan of {} ranks", rank, plan.ranks());
  if (plan.devices.empty()) return rank;
  if (rank >= int(plan.devices.size()))
    fail("devices={} has {} entries, fewer than the plan's {} ranks", fmt::join(plan.devices, ":"),
         plan.devices.size(), plan.ranks());
  return plan.devices[rank];
}

void validate(const Plan& plan, const ModelSpec& model, int global_batch) {
  if (plan.dp < 1) fail("dp={} must be at least 1", plan.dp);
  if (plan.tp < 1) fail("tp={} must be at least 1", plan.tp);
  if (plan.pp < 1) fail("pp={} must be at least 1", plan.pp);
  if (plan.mb < 1) fail("mb={} must be at least 1", plan.mb);
  if (model.n_head % plan.tp != 0)
    fail("tp={} does not divide the {} attention heads of {}", plan.tp, model.n_head, model.name);
  if (plan.pp > model.n_layer)
    fail("pp={} exceeds the {} layers of {}", plan.pp, model.n_layer, model.name);
  if (global_batch < 1) fail("global batch {} must be at least 1 sequence", global_batch);
  if (global_batch % (plan.dp * plan.mb) != 0)
    fail("global batch {} is not divisible by dp*mb = {}*{} = {} (microbatch size must be whole)",
         global_batch, plan.dp, plan.mb, plan.dp * plan.mb);
  if (plan.zero < 0 || plan.zero > 3) fail("zero={} is not a ZeRO stage 0-3", plan.zero);
  if (plan.zero > 0 && plan.dp == 1)
    fail("zero={} needs dp>1: ZeRO shards over the data-parallel group, and dp=1", plan.zero);
  stage_layers(model, plan);  // throws on a bad split
  if (plan.bucket_mib < 1) fail("bucket_mib={} must be at least 1 MiB", plan.bucket_mib);
  const double model_bytes = double(model.parameters()) * element_bytes(plan.precision);
  // The default (DDP's 25 MiB) stays valid on a smaller model (one bucket, as DDP makes it);
  // any larger value than the model holds is a mistake.
  if (plan.bucket_mib > Plan{}.bucket_mib && double(plan.bucket_mib) * (1 << 20) > model_bytes)
    fail("bucket_mib={} is larger than the {:.1f} MiB of parameters of {} in {}", plan.bucket_mib,
         model_bytes / (1 << 20), model.name, to_string(plan.precision));
  if (!plan.devices.empty()) {
    if (int(plan.devices.size()) != plan.ranks())
      fail("devices={} has {} entries but the plan has dp*tp*pp = {} ranks",
           fmt::join(plan.devices, ":"), plan.devices.size(), plan.ranks());
    std::set<int> seen;
    for (int d : plan.devices) {
      if (d < 0) fail("devices={}: device {} is negative", fmt::join(plan.devices, ":"), d);
      if (!seen.insert(d).second)
        fail("devices={}: device {} appears twice", fmt::join(plan.devices, ":"), d);
    }
  }
}

}  // namespace fabtrain
