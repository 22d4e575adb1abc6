// One rank's state in a checkpoint: what the model file does not hold and a resumed run needs
// to continue bit-identically (AdamW's m and v of the parameters the rank updates, the steps
// done, the data position, the seed, the loss scaler's state under fp16) and what it must share
// with the run that wrote it (world, rank, plan and settings). The file ends with its checksum;
// loading checks it and refuses non-finite values. Written to a temporary name, fsync'ed and
// renamed. Not here: the model file (exec/model/model_file.hpp), the file names in a checkpoint
// directory (checkpoint_dir.hpp), the checks on resume (trainer.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "exec/play/loss_scale.hpp"

namespace fabtrain {

struct RankState {
  std::int64_t step = 0;           // steps completed
  std::int64_t data_position = 0;  // global sequences consumed
  std::uint64_t seed = 0;          // the data order and initialisation seed
  int world = 1, rank = 0;
  std::string plan;                   // canonical plan text, must match on resume
  std::string settings;               // "seq=64 batch=8 data=..." : what else must match on resume
  std::vector<float> adam_m, adam_v;  // over the parameters this rank updates
  std::optional<LossScalerState> loss_scaling;  // where the run scales its loss (fp16)
  // Of the file read (2: ZeRO shards over the whole stage; before 4: no loss scaler's state).
  int version = 4;
};
void write_rank_state(const std::string& path, const RankState& state);
RankState read_rank_state(const std::string& path);

}  // namespace fabtrain
