// libFuzzer target: a plan's text form and JSON form, validated against gpt2-nano and compiled
// (the schedule then played symbolically) when valid.
#include <nlohmann/json.hpp>

#include "common/strict_json.hpp"
#include "plan/plan.hpp"
#include "plan/schedule.hpp"
#include "plan/symbolic_run.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fabtrain;
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const ModelSpec nano = load_model("gpt2-nano");
  auto check = [&](const Plan& plan) {
    const int batch = 8 * plan.ranks();
    validate(plan, nano, batch);
    (void)to_string(plan);
    (void)technique_name(plan);
    if (plan.ranks() <= 16 && plan.mb <= 16) (void)symbolic_run(compile(nano, plan, batch, 16));
  };
  fuzz::refused_only_by_error([&] { check(parse_plan(text)); });
  fuzz::refused_only_by_error([&] { check(parse_json_strict(text, "plan JSON").get<Plan>()); });
  return 0;
}
