// What the checkpoint's files share (the model file, exec/model/model_file.hpp, and each rank's
// state, exec/run/rank_state.hpp): a checksum that catches a torn or edited file, a whole-file
// read that names a directory or a missing file, and the refusal of non-finite values. Not here:
// the formats, or writing (common/atomic_file.hpp).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fabtrain {

// FNV-1a over bytes: catches a torn or edited file, not an adversary.
std::uint64_t checksum(const char* data, std::size_t n);
// The first non-finite value names its place ("PATH: WHAT 3 of 10 is nan"): a checkpoint of NaN
// would train on NaN.
void check_finite(std::span<const float> values, const std::string& path, const char* what);
// The file's bytes; `what` names it in messages ("checkpoint", "state file").
std::vector<char> read_whole_file(const std::string& path, const char* what);

}  // namespace fabtrain
