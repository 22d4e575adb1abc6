// The model file of a checkpoint, in llm.c's format (256 int32 header: magic 20240326, version
// 3 = fp32, maxT, V, L, NH, C, Vp; then the 16 tensors of the full parameter vector, see
// exec/model/kernels_layout.hpp), so llm.c's gpt2_124M.bin loads here and ours load there; train,
// sample and embed read it. Header slots 8-12, which llm.c leaves zero, hold a checksum of the
// parameters and the step; loading checks both and refuses non-finite values. The file is written
// to a temporary name, fsync'ed and renamed, so a crash never leaves a broken one.
// Not here: each rank's optimizer state (exec/run/rank_state.hpp), the checkpoint directory
// (exec/run/checkpoint_dir.hpp), gathering the parameters from the ranks (exec/run/trainer.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/model_spec.hpp"

namespace fabtrain {

// `step` goes into the header with a checksum of the parameters (slots llm.c leaves zero).
void write_model_checkpoint(const std::string& path, const ModelSpec& model,
                            std::span<const float> full_parameters, std::int64_t step = -1);
// Reads and checks a checkpoint against the model: a different field is an Error naming the
// file, the field and both values; so are a checksum mismatch, a non-finite parameter and,
// when `step` is given, a file written at another step.
std::vector<float> read_model_checkpoint(const std::string& path, const ModelSpec& model,
                                         std::optional<std::int64_t> step = std::nullopt);

}  // namespace fabtrain
