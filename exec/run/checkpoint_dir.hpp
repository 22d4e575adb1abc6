// The checkpoint directory as a job owns it: its file names (a model file per step, a state file
// per step and rank, "latest"), a lock held for the whole job (a restarted job, or one that
// overlaps with orphaned ranks of a killed one, is refused instead of interleaving its files),
// and pruning of all but the newest checkpoints. File formats: exec/model/model_file.hpp,
// rank_state.hpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "common/file_lock.hpp"

namespace fabtrain {

// File names inside a checkpoint directory.
std::string model_checkpoint_path(const std::string& dir, std::int64_t step);
std::string rank_state_path(const std::string& dir, std::int64_t step, int rank);
// "latest" holds the last step whose files are all written; nullopt when there is none.
void write_latest_step(const std::string& dir, std::int64_t step);
std::optional<std::int64_t> read_latest_step(const std::string& dir);

// flock(2) on DIR/lock, held until destruction (or the process's end, however it ends); taking it
// removes the temporary files a killed job left.
class CheckpointLock {
 public:
  explicit CheckpointLock(const std::string& dir);

 private:
  FileLock lock_;
};

// A new run (no --resume) refuses a folder that holds checkpoints already: pruning by step number
// would mix them with its own and remove its own first.
void refuse_earlier_checkpoints(const std::string& dir);

// Keeps the `keep` newest steps: removes older model files (when `root`) and this rank's older
// state files, and any temporary file of this process left behind.
void prune_checkpoints(const std::string& dir, int keep, int rank, bool root);

}  // namespace fabtrain
