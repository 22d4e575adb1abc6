// --precision against the plan's precision (see precision_option.hpp).
#include "exec/run/precision_option.hpp"

#include "common/error.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

std::string plan_with_precision(const std::string& plan_text, const std::string& precision_flag) {
  if (precision_flag.empty()) return plan_text;
  Precision precision;
  try {
    precision = parse_precision(precision_flag);
  } catch (const Error& e) {
    fail("--precision {}: {}", precision_flag, e.what());
  }
  Plan plan = parse_plan(plan_text);
  if (plan.precision != Precision::fp32 && plan.precision != precision)
    fail("--precision {} disagrees with --plan {} (precision={}): give one of them", precision_flag,
         plan_text, to_string(plan.precision));
  plan.precision = precision;
  return to_string(plan);
}

}  // namespace fabtrain
