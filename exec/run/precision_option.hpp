// fabtrain-exec's --precision is the plan's precision key by another name, in the one vocabulary
// of models/costs.hpp (fp32, fp16, bf16, tf32): given, it sets the plan's precision, and a plan
// that names another precision is refused; left out, the plan's precision holds. Whether the
// executor can train in it is plan/executor_support.hpp's answer, checked by train().
#pragma once
#include <string>

namespace fabtrain {

// The plan text to train: plan_text itself when precision_flag is empty, else with its
// precision set (canonical form). Errors name --precision and --plan.
std::string plan_with_precision(const std::string& plan_text, const std::string& precision_flag);

}  // namespace fabtrain
