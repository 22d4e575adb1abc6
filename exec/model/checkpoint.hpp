// Checkpoints: the model in llm.c's format (256 int32 header: magic 20240326, version 3 = fp32,
// maxT, V, L, NH, C, Vp; then the 16 tensors of the full parameter vector, see
// exec/model/kernels_layout.hpp), so llm.c's gpt2_124M.bin loads here and ours load there; and one
// state file per rank (AdamW m and v of the parameters the rank updates, step, data position,
// seed, plan and settings). Header slots 8-12, which llm.c leaves zero, hold a checksum of the
// parameters and the step; a state file ends with its checksum. Loading checks both and refuses
// non-finite values. Every file is written to a temporary name, fsync'ed and renamed, so a crash
// never leaves a broken checkpoint; a directory's "latest" file names the last complete step.
// Not here: gathering the parameters from the ranks (exec/run/trainer.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/atomic_file.hpp"
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

struct RankState {
  std::int64_t step = 0;           // steps completed
  std::int64_t data_position = 0;  // global sequences consumed
  std::uint64_t seed = 0;          // the data order and initialisation seed
  int world = 1, rank = 0;
  std::string plan;                   // canonical plan text, must match on resume
  std::string settings;               // "seq=64 batch=8 data=..." : what else must match on resume
  std::vector<float> adam_m, adam_v;  // over the parameters this rank updates
  int version = 3;                    // of the file read (2: ZeRO shards over the whole stage)
};
void write_rank_state(const std::string& path, const RankState& state);
RankState read_rank_state(const std::string& path);

// File names inside a checkpoint directory.
std::string model_checkpoint_path(const std::string& dir, std::int64_t step);
std::string rank_state_path(const std::string& dir, std::int64_t step, int rank);
// "latest" holds the last step whose files are all written; nullopt when there is none.
void write_latest_step(const std::string& dir, std::int64_t step);
std::optional<std::int64_t> read_latest_step(const std::string& dir);

}  // namespace fabtrain
