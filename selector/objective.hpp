// What the search ranks by: one stated objective, the same for plan, recommend and study.
//   time-to-train: seconds to train the token count (fastest first; with one token count for
//                  every plan this orders as tokens/s does, but says what it means);
//   tokens-per-s:  throughput;
//   gpu-hours:     GPUs x time to train (the cost of a run: fewer GPUs at a little less speed win).
// Every objective is a cost per token, lower is better, so the search's bounds (seconds per
// token) carry over by a factor: 1, or the plan's GPU count for gpu-hours.
#pragma once
#include <string>
#include <vector>

namespace fabtrain {

enum class Objective { time_to_train, tokens_per_s, gpu_hours };

Objective parse_objective(const std::string& text);  // refuses others, listing the known ones
const char* to_string(Objective objective);          // "time-to-train", ...
std::vector<std::string> objective_names();

// Multiplies a plan's seconds per token into the objective's cost per token.
inline double objective_weight(Objective objective, int gpus) {
  return objective == Objective::gpu_hours ? double(gpus) : 1.0;
}

}  // namespace fabtrain
