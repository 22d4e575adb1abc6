// A lower bound of a schedule's step time from the schedule and the slice alone (no
// simulation), so that the search skips plans that cannot win. See lower_bound.cpp for what it
// counts; the test suite checks it never exceeds the simulated step.
#pragma once
#include "plan/schedule.hpp"
#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/slice_platform.hpp"

namespace fabtrain {

// platform: the slice's platform, configured (SlicePlatform::of(slice).configure(...)).
double step_lower_bound(const Schedule& schedule, const Slice& slice, SlicePlatform& platform,
                        const Calibration* calibration);

}  // namespace fabtrain
