// What `fabtrain-exec train` can run, in one place, so a plan the search prints as runnable is
// one the executor accepts: it trains in fp32 on CPU and on CUDA in fp32, tf32 (fp32 with its
// matrix products on TF32 tensor cores), bf16 or fp16 (mixed precision: fp32 master weights,
// matrix products on 16-bit tensor cores; fp16 with dynamic loss scaling); attention=flash is
// modelled by the simulator only (the executor's attention keeps the scores, which a flash
// plan's memory leaves out). Every other plan key is executed as written.
// Not here: whether a particular GPU has the tensor cores of a precision
// (exec/backends/cuda_backend.cpp, at start-up).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace fabtrain {

enum class ExecutorDevice { cpu, cuda };
const char* to_string(ExecutorDevice device);

std::vector<Precision> executor_precisions(ExecutorDevice device);
// Empty when the executor trains the plan on that device; else why not, naming the key, the
// value and what it supports ("precision=bf16: fabtrain-exec trains in fp32 on cpu ...").
std::optional<std::string> why_not_runnable(const Plan& plan, ExecutorDevice device);
// Throws fabtrain::Error "--plan TEXT: <why not>" when the executor cannot train the plan.
void require_runnable(const Plan& plan, ExecutorDevice device);

}  // namespace fabtrain
