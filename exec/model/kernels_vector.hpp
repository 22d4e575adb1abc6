// Helpers for the CPU kernels' element-wise loops: a vectorisable exp for non-positive
// arguments, the target_clones attribute that compiles a loop for AVX-512 and AVX2 besides the
// baseline, and a static split of [0, count) over the OpenMP threads. Internal to exec/kernels*.
// Not here: the kernels themselves (kernels.cpp).
#pragma once
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstdint>

// One clone per instruction set; the loader picks the best the CPU has (GCC ifunc). Features,
// not "arch=" names: GCC will not inline the helpers below into a clone of another arch. Only
// for functions that hold the loops themselves: OpenMP regions stay outside them.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FABTRAIN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FABTRAIN_VECTOR_CLONES
#endif

namespace fabtrain::kernels {

// exp(x) for x <= 0 (x >= -87.3 after clamping; below it the result is 0 to float precision),
// relative error under 2e-7: x = k ln2 + r with |r| <= ln2/2, exp(r) by its Taylor series to
// degree 7, 2^k built in the exponent bits. Inline and branch-free, so `omp simd` loops
// calling it vectorise.
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  x = std::max(x, -87.0f);
  // k = round(x / ln2) by the 1.5 * 2^23 trick: plain arithmetic, no rounding instruction.
  constexpr float round_magic = 12582912.0f;
  const float k = (x * 1.44269504088896341f + round_magic) - round_magic;
  const float r = (x - k * 0.693145751953125f) - k * 1.428606765330187e-06f;  // ln2 hi + lo
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((std::int32_t(k) + 127) << 23);
}

// f(begin, end) on each OpenMP thread for its static share of [0, count).
template <typename F>
void for_thread_ranges(std::int64_t count, F&& f) {
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
    const std::int64_t begin = count * me / threads, end = count * (me + 1) / threads;
    if (begin < end) f(begin, end);
  }
}

}  // namespace fabtrain::kernels
