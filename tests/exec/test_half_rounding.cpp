// fp32 to bf16 and fp16 (exec/model/half_rounding.hpp), the rounding the CUDA backend's 16-bit
// matrix products give their operands: every finite 16-bit value comes back as itself, every
// midpoint between two neighbours goes to the one with an even last bit and the fp32 values just
// beside it to the nearer one, and the edges: overflow to infinity, NaN, subnormals, signs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "exec/model/half_rounding.hpp"

using namespace fabtrain;

namespace {

float next_up(float x) { return std::nextafter(x, std::numeric_limits<float>::infinity()); }
float next_down(float x) { return std::nextafter(x, -std::numeric_limits<float>::infinity()); }

// Every pair of neighbouring positive finite 16-bit values h, h+1 (up to last, the largest
// finite): the midpoint ties to the even one, the fp32 values beside it go to the nearer.
template <typename Bits, typename Value>
void check_neighbours(Bits bits, Value value, std::uint16_t last, const std::string& format) {
  INFO(format);
  int wrong = 0;
  for (std::uint32_t h = 0; h < last; ++h) {
    const float low = value(std::uint16_t(h)), high = value(std::uint16_t(h + 1));
    // Exact: one bit more than the 16-bit significand (and no sum that could overflow).
    const float mid = low + (high - low) / 2;
    const std::uint16_t even = (h & 1u) ? std::uint16_t(h + 1) : std::uint16_t(h);
    wrong += bits(low) != h;
    wrong += bits(mid) != even;
    wrong += bits(next_down(mid)) != h;
    wrong += bits(next_up(mid)) != h + 1;
    wrong += bits(-mid) != (even | 0x8000u);
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("bf16 rounding: nearest, ties to even, for every pair of neighbouring values") {
  check_neighbours(half::bf16_bits, half::bf16_value, 0x7f7f, "bf16");
  CHECK(half::bf16_value(half::bf16_bits(1.0f)) == 1.0f);
  CHECK(half::bf16_bits(1.0f + 0x1p-8f) == half::bf16_bits(1.0f));  // a tie, to the even 1.0
  CHECK(half::bf16_value(half::bf16_bits(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);
}

TEST_CASE("bf16 rounding: overflow, infinity, NaN, subnormals and signs") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(half::bf16_bits(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to infinity
  CHECK(half::bf16_bits(inf) == 0x7f80);
  CHECK(half::bf16_bits(-inf) == 0xff80);
  CHECK(std::isnan(half::bf16_value(half::bf16_bits(std::nanf("")))));
  CHECK(std::isnan(half::bf16_value(half::bf16_bits(-std::nanf("")))));
  CHECK(half::bf16_bits(-0.0f) == 0x8000);
  const float tiny = std::numeric_limits<float>::denorm_min();
  CHECK(half::bf16_bits(tiny) == 0x0000);  // below half of bf16's smallest subnormal
  CHECK(half::bf16_value(half::bf16_bits(0x1p-130f)) == 0x1p-130f);  // a bf16 subnormal
}

TEST_CASE("fp16 rounding: nearest, ties to even, for every pair of neighbouring values") {
  check_neighbours(half::fp16_bits, half::fp16_value, 0x7bff, "fp16");
  CHECK(half::fp16_bits(1.0f + 0x1p-11f) == half::fp16_bits(1.0f));  // a tie, to the even 1.0
  CHECK(half::fp16_value(half::fp16_bits(1.0f + 3 * 0x1p-11f)) == 1.0f + 0x1p-9f);
}

TEST_CASE("fp16 rounding: its range, subnormals, infinity, NaN and signs") {
  CHECK(half::fp16_value(half::fp16_bits(65504.0f)) == 65504.0f);  // the largest finite
  CHECK(half::fp16_bits(65519.0f) == 0x7bff);                      // below the midpoint
  CHECK(half::fp16_bits(65520.0f) == 0x7c00);                      // the midpoint: infinity
  CHECK(half::fp16_bits(1e5f) == 0x7c00);
  CHECK(half::fp16_bits(-1e5f) == 0xfc00);
  CHECK(half::fp16_bits(0x1p-14f) == 0x0400);  // the smallest normal
  CHECK(half::fp16_bits(0x1p-24f) == 0x0001);  // the smallest subnormal
  CHECK(half::fp16_bits(0x1p-25f) == 0x0000);  // a tie between 0 and 2^-24: to 0
  CHECK(half::fp16_bits(next_up(0x1p-25f)) == 0x0001);
  CHECK(half::fp16_bits(3 * 0x1p-25f) == 0x0002);  // 1.5 subnormal steps: to the even 2
  CHECK(half::fp16_value(0x0001) == 0x1p-24f);
  CHECK(half::fp16_value(0x8001) == -0x1p-24f);
  CHECK(half::fp16_bits(-0.0f) == 0x8000);
  CHECK(half::fp16_value(0x7c00) == std::numeric_limits<float>::infinity());
  CHECK(half::fp16_bits(std::nanf("")) == 0x7e00);
  CHECK(std::isnan(half::fp16_value(0x7e00)));
}
