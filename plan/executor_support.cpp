// What the executor runs (see executor_support.hpp).
#include "plan/executor_support.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.hpp"

namespace fabtrain {

const char* to_string(ExecutorDevice device) {
  return device == ExecutorDevice::cuda ? "cuda" : "cpu";
}

std::vector<Precision> executor_precisions(ExecutorDevice device) {
  if (device == ExecutorDevice::cuda)
    return {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16};
  return {Precision::fp32};
}

std::optional<std::string> why_not_runnable(const Plan& plan, ExecutorDevice device) {
  if (plan.attention == Attention::flash)
    return std::string(
        "attention=flash: fabtrain-exec's attention is not fused: it keeps the scores "
        "in memory, which the plan's memory estimate leaves out");
  if (plan.vocab_parallel && plan.tp > 1)
    return std::string(
        "vocab=parallel: fabtrain-exec holds the token embedding and the output layer whole on "
        "every tensor-parallel rank (vocab=replicated); the vocabulary-parallel split is "
        "simulate-only");
  if (plan.pipeline_scatter && plan.tp > 1 && plan.pp > 1)
    return std::string(
        "p2p=scatter: fabtrain-exec sends a pipeline stage's whole boundary tensor from every "
        "tensor-parallel rank (p2p=whole); sending 1/tp from each and all-gathering it is "
        "simulate-only");
  const auto supported = executor_precisions(device);
  if (std::find(supported.begin(), supported.end(), plan.precision) != supported.end())
    return std::nullopt;
  std::string list;
  for (std::size_t i = 0; i < supported.size(); ++i)
    list += (i == 0                      ? ""
             : i + 1 == supported.size() ? " or "
                                         : ", ") +
            std::string(to_string(supported[i]));
  return fmt::format(
      "precision={}: fabtrain-exec trains in {} on {} (tf32 and the fp16 and bf16 mixed "
      "precisions need the CUDA backend's tensor cores)",
      to_string(plan.precision), list, to_string(device));
}

void require_runnable(const Plan& plan, ExecutorDevice device) {
  if (const auto why = why_not_runnable(plan, device)) fail("--plan {}: {}", to_string(plan), *why);
}

}  // namespace fabtrain
