// The learning-rate schedule: linear warm-up, then cosine decay to min_fraction of the peak.
#include <doctest/doctest.h>

#include "exec/model/lr_schedule.hpp"

using namespace fabtrain;

TEST_CASE("learning rate: warm-up rises linearly, cosine falls to the floor at the last step") {
  const LrSchedule s{1e-3f, 10, 110, 0.1f};
  CHECK(s.at(0) == doctest::Approx(1e-4));
  CHECK(s.at(4) == doctest::Approx(5e-4));
  CHECK(s.at(9) == doctest::Approx(1e-3));
  CHECK(s.at(10) == doctest::Approx(1e-3));
  CHECK(s.at(109) == doctest::Approx(1e-4));
  // Halfway through the decay the cosine is at the middle of peak and floor.
  const LrSchedule t{1e-3f, 0, 101, 0.0f};
  CHECK(t.at(50) == doctest::Approx(5e-4));
  for (int step = 11; step < 110; ++step) CHECK(s.at(step) <= s.at(step - 1));
}
