// How far a backend's output is from the reference's: the largest absolute difference relative to
// the reference's largest magnitude (fp32 round-off of sums taken in another order stays small
// against the scale, where a per-element relative error would blow up near zero). Shared by the
// backend tests (tests/exec/test_backend_ops.cpp, tests/exec_cuda/).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <span>

namespace fabtrain::test {

inline double relative_difference(std::span<const float> got, std::span<const float> want) {
  REQUIRE(got.size() == want.size());
  double diff = 0, scale = 1e-30;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, double(std::fabs(got[i] - want[i])));
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  return diff / scale;
}

}  // namespace fabtrain::test
