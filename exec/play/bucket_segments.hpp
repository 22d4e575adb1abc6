// Which of a stage's local parameter elements belong to each data-parallel gradient bucket
// (plan/buckets.hpp: block ranges in backward order). An element belongs to the block whose
// backward produces its gradient: wpe and the tied wte to the embed block, except on a stage
// without the embed (the last stage's copy of the tied wte, pp > 1), where wte is the head's;
// each layer's attention and MLP tensors to its attn and mlp blocks; lnf to the head. In the
// stage's local layout (exec/model/gpt2_stage.cpp) a block's tensors are adjacent, so a bucket is
// usually one segment; the last stage's head bucket is two (wte at the start, lnf at the end).
// Pure: no communication, no stage. Not here: the ZeRO ownership of a bucket (zero_layout.hpp).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "exec/model/gpt2_stage.hpp"
#include "models/model_spec.hpp"

namespace fabtrain {

// (local begin, count), ascending and merged where adjacent.
using Segments = std::vector<std::pair<std::int64_t, std::int64_t>>;

// The block (models/costs.hpp index) whose gradient a full-layout element is; holds_embed: the
// stage holds block 0 (decides wte's owner).
int block_of_element(const ModelSpec& model, std::int64_t full_offset, bool holds_embed);

// Per bucket (same order as buckets), the local segments of its blocks' parameters. Every local
// element of runs lands in exactly one bucket; an element outside every bucket is an error.
std::vector<Segments> bucket_segments(const ModelSpec& model, const std::vector<ParamRun>& runs,
                                      const std::vector<BlockRange>& buckets, bool holds_embed);

}  // namespace fabtrain
