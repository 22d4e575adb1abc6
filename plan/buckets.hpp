// Data-parallel gradient buckets: a stage's blocks grouped, walked in BACKWARD order (last block
// first, as backward produces their gradients), into consecutive block ranges whose parameter
// bytes reach bucket_mib MiB; the last bucket (the stage's first blocks) may be smaller. PyTorch
// DDP buckets the same way (bucket_cap_mb, default 25, parameters in reverse order).
//
// The buckets depend on (model, plan.tp, plan.pp, plan.layers, plan.bucket_mib, plan.precision,
// stage) ONLY, never on plan.overlap: overlap=off issues the SAME bucket collectives, blocking,
// after the whole backward, so the executor's ZeRO ownership and the order of additions are the
// same with overlap on and off (what makes their losses bit-equal).
//
// A block's parameters are those it holds (models/costs.hpp block_parameters); the last stage's
// copy of the tied wte (pp > 1) belongs to the head block, whose backward produces its gradient.
// Not here: where the bucket collectives go in the stream (compile.cpp).
#pragma once
#include <vector>

#include "plan/plan.hpp"

namespace fabtrain {

// The buckets of one stage in backward order: result[0] holds the stage's last blocks. Their
// ranges are disjoint and cover the stage's blocks.
std::vector<BlockRange> gradient_buckets(const ModelSpec& model, const Plan& plan, int stage);

// Parameters one rank of the stage holds in blocks [range.begin, range.end) (tensor-parallel
// shard), with the tied wte copy when the range holds the last stage's head and pp > 1. Over the
// buckets of a stage they sum to stage_parameters (plan/schedule.hpp).
double bucket_parameters(const ModelSpec& model, const Plan& plan, int stage, BlockRange range);

}  // namespace fabtrain
