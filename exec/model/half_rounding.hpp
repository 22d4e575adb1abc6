// fp32 to the two 16-bit float formats of mixed precision, rounded to nearest, ties to even (as
// CUDA's __float2bfloat16_rn and __float2half_rn): bf16 (8 exponent bits, 7 mantissa bits: fp32's
// range, overflows only at fp32's) and fp16 (5 exponent bits, 10 mantissa bits: largest finite
// 65504, values from 65520 up become infinity, subnormals below 2^-14). NaN stays NaN (quiet),
// infinity stays infinity, the sign is kept. The same code runs in the CUDA kernels that convert
// the operands of 16-bit matrix products (exec/model/cuda) and in the CPU tests.
// Not here: which products run in 16 bits (exec/model/cuda/cuda_gemm.hpp), loss scaling.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FABTRAIN_HOST_DEVICE __host__ __device__
#else
#define FABTRAIN_HOST_DEVICE
#endif

namespace fabtrain::half {

FABTRAIN_HOST_DEVICE inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

FABTRAIN_HOST_DEVICE inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// The bf16 nearest to f: fp32's upper 16 bits after adding half of the dropped part (ties to an
// even last bit).
FABTRAIN_HOST_DEVICE inline std::uint16_t bf16_bits(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

FABTRAIN_HOST_DEVICE inline float bf16_value(std::uint16_t h) {
  return bits_float(std::uint32_t(h) << 16);
}

// The fp16 nearest to f (F. Giesen's float_to_half_fast3_rtne): normal results by rebiasing the
// exponent and rounding the 13 dropped mantissa bits; subnormal ones by one fp32 addition that
// aligns the 10 mantissa bits at the bottom (fp32 addition rounds to nearest even).
FABTRAIN_HOST_DEVICE inline std::uint16_t fp16_bits(float f) {
  std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u >= 0x47800000u)  // 2^16 and up (and infinity, NaN): past fp16's range
    return std::uint16_t(sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (u < 0x38800000u) {                      // below 2^-14: subnormal or zero
    const std::uint32_t magic = 0x3f000000u;  // 0.5: its ulp is fp16's smallest subnormal, 2^-24
    return std::uint16_t(sign | (float_bits(bits_float(u) + bits_float(magic)) - magic));
  }
  const std::uint32_t odd = (u >> 13) & 1u;
  u += 0xc8000fffu + odd;  // exponent bias 127 -> 15, then round half to even
  return std::uint16_t(sign | (u >> 13));
}

FABTRAIN_HOST_DEVICE inline float fp16_value(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in fp32
    const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1fu) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace fabtrain::half
