#include "selector/objective.hpp"

#include "common/error.hpp"

namespace fabtrain {

const char* to_string(Objective objective) {
  switch (objective) {
    case Objective::time_to_train:
      return "time-to-train";
    case Objective::tokens_per_s:
      return "tokens-per-s";
    case Objective::gpu_hours:
      return "gpu-hours";
  }
  return "time-to-train";
}

std::vector<std::string> objective_names() {
  return {"time-to-train", "tokens-per-s", "gpu-hours"};
}

Objective parse_objective(const std::string& text) {
  for (auto o : {Objective::time_to_train, Objective::tokens_per_s, Objective::gpu_hours})
    if (text == to_string(o)) return o;
  fail("--objective {} is not known (time-to-train, tokens-per-s or gpu-hours)", text);
}

}  // namespace fabtrain
