// What a calibration does not cover on a slice, said before its predictions are read: GPU types
// it has no compute entries for and link classes it has no link entries for (the catalog's values
// apply to them), corrections fitted on other hardware (a calibration made on CPUs over loopback
// applied to GPUs over a WAN), and a held-out error too large for the ranking to be trusted.
#pragma once
#include <string>
#include <vector>

#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain {

// Above this held-out step error (a fraction) the ranking is not trustworthy: plans a few percent
// apart are routinely reordered by an error of this size (a threshold chosen here, not measured).
inline constexpr double kUntrustedHeldOutError = 0.20;

// One line per warning, each naming the calibration's source and what the catalog stands in for;
// empty when the calibration covers the slice (or is empty).
std::vector<std::string> calibration_warnings(const Calibration& calibration, const Slice& slice);

}  // namespace fabtrain
