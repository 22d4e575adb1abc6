// The search's candidates run at their plan's default batch (plan/default_batch.hpp), so
// `fabtrain simulate --plan <a candidate>` plays the step the search played.
#include <doctest/doctest.h>

#include "plan/default_batch.hpp"
#include "selector/enumerate.hpp"
#include "selector/study_rule.hpp"

using namespace fabtrain;

TEST_CASE("every enumerated and study candidate uses its plan's default batch") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  const auto plans = enumerate_plans(model, slice, {});
  REQUIRE(!plans.empty());
  for (const Candidate& c : plans) {
    CAPTURE(to_string(c.plan));
    CHECK(c.global_batch == default_global_batch(c.plan));
  }
  const auto subsets = gpu_subsets(slice, false);
  REQUIRE(!subsets.empty());
  const auto study = study_techniques(model, slice, subsets.front(), {});
  REQUIRE(!study.empty());
  for (const Candidate& c : study) {
    CAPTURE(to_string(c.plan));
    CHECK(c.global_batch == default_global_batch(c.plan));
  }
}
