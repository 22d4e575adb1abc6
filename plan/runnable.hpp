// What fabtrain-exec can run of a plan, so that every plan the search recommends either comes
// with a launch line that runs, or is marked simulate-only with the reason. Written from what
// fabtrain-exec train accepts today (apps/fabtrain-exec/cmd_train.cpp, exec/trainer.cpp,
// exec/cuda/cuda_backend.cpp): every dp/tp/pp/mb/zero/schedule/recompute/layers combination the
// plan rules accept; fp32 on CPU and CUDA; tf32 on CUDA only (Ampere and newer); attention
// unfused. A local stand-in until the executor publishes its own list of what it runs.
#pragma once
#include <string>

#include "plan/plan.hpp"

namespace fabtrain {

// Empty when `fabtrain-exec train --device DEVICE` runs the plan as simulated; otherwise why it
// is simulate-only. device: "cpu" or "cuda".
std::string why_not_runnable(const Plan& plan, const std::string& device);

}  // namespace fabtrain
