// Gradient buckets (see buckets.hpp). Not here: placing their collectives (compile.cpp).
#include "plan/buckets.hpp"

#include "common/error.hpp"

namespace fabtrain {

double bucket_parameters(const ModelSpec& model, const Plan& plan, int stage, BlockRange range) {
  const std::vector<BlockRange> stages = stage_blocks(model, plan);
  if (stage < 0 || stage >= int(stages.size()))
    fail("stage {} out of range for pp={}", stage, plan.pp);
  const BlockRange whole = stages[stage];
  if (range.begin < whole.begin || range.end > whole.end || range.begin >= range.end)
    fail("blocks {}:{} are not inside stage {}'s blocks {}:{}", range.begin, range.end, stage,
         whole.begin, whole.end);
  double parameters = 0;
  for (int i = range.begin; i < range.end; ++i)
    parameters +=
        double(block_parameters(model, block_at(model, i), split_of(plan, block_at(model, i))));
  const bool holds_head = range.end == block_count(model);
  if (plan.pp > 1 && holds_head && model.tie_word_embeddings)
    parameters += tied_copy_parameters(model, plan);
  return parameters;
}

std::vector<BlockRange> gradient_buckets(const ModelSpec& model, const Plan& plan, int stage) {
  if (plan.bucket_mib < 1) fail("bucket_mib={} must be at least 1 MiB", plan.bucket_mib);
  const std::vector<BlockRange> stages = stage_blocks(model, plan);
  if (stage < 0 || stage >= int(stages.size()))
    fail("stage {} out of range for pp={}", stage, plan.pp);
  const double cap = double(plan.bucket_mib) * (1 << 20);
  const double e = element_bytes(plan.precision);
  const bool tied_copy = plan.pp > 1 && stage == plan.pp - 1 && model.tie_word_embeddings;
  std::vector<BlockRange> buckets;
  int end = stages[stage].end;
  double held = 0;  // parameters of blocks [i, end)
  for (int i = stages[stage].end - 1; i >= stages[stage].begin; --i) {
    held += double(block_parameters(model, block_at(model, i), split_of(plan, block_at(model, i))));
    if (tied_copy && i == block_count(model) - 1) held += tied_copy_parameters(model, plan);
    if (held * e >= cap) {
      buckets.push_back({i, end});
      end = i;
      held = 0;
    }
  }
  if (end > stages[stage].begin) buckets.push_back({stages[stage].begin, end});
  return buckets;
}

}  // namespace fabtrain
