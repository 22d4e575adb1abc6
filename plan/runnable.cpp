#include "plan/runnable.hpp"

#include <fmt/format.h>

namespace fabtrain {

std::string why_not_runnable(const Plan& plan, const std::string& device) {
  const std::string precision = to_string(plan.precision);
  if (plan.precision == Precision::fp16 || plan.precision == Precision::bf16)
    return fmt::format("simulate-only: precision={} (fabtrain-exec trains in fp32, or tf32 on "
                       "CUDA; fp16 and bf16 are not implemented)", precision);
  if (plan.precision == Precision::tf32 && device != "cuda")
    return fmt::format("simulate-only: precision=tf32 on --device {} (tf32 needs --device cuda on "
                       "an Ampere or newer GPU)", device);
  if (plan.attention == Attention::flash)
    return "simulate-only: attention=flash (fabtrain-exec's attention is not fused: it would keep "
           "the scores in memory, which the plan's memory leaves out)";
  return "";
}

}  // namespace fabtrain
