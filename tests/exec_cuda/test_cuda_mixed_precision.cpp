// The CUDA backend's bf16 and fp16 matrix products (exec/model/cuda/cuda_gemm.hpp): the rounding
// its kernel gives the operands is the host helpers' (exec/model/half_rounding.hpp), which agree
// with CUDA's own conversions (checked without a GPU), and the whole model's loss and gradients
// on 16-bit products stay within 16-bit round-off of the CPU stage's (fp32), and the products'
// 16-bit operand scratch is the size exec/model/half_operands.hpp predicts. Cases that need a
// GPU are skipped (exit 77) without one.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../exec/reference/reference_data.hpp"
#include "../exec/relative_difference.hpp"
#include "exec/model/cuda/cuda_gemm.hpp"
#include "exec/model/cuda/cuda_kernels.hpp"
#include "exec/model/cuda/cuda_ops.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/half_operands.hpp"
#include "exec/model/half_rounding.hpp"
#include "require_gpu.hpp"

using namespace fabtrain;
using test::relative_difference;
using test::require_gpu;

namespace {

// Floats over the whole range: a fixed pseudo-random walk over the bit patterns, with the edges.
std::vector<float> samples() {
  std::vector<float> v{0.0f,
                       -0.0f,
                       1.0f,
                       65504.0f,
                       65519.0f,
                       65520.0f,
                       0x1p-24f,
                       0x1p-25f,
                       3 * 0x1p-25f,
                       0x1p-14f,
                       1e-30f,
                       -3.3e38f,
                       std::numeric_limits<float>::infinity()};
  std::uint32_t x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1664525u + 1013904223u;
    float f;
    std::memcpy(&f, &x, sizeof f);
    if (!std::isnan(f)) v.push_back(f);
  }
  return v;
}

std::uint16_t bits_of(__nv_bfloat16 h) {
  std::uint16_t u;
  std::memcpy(&u, &h, sizeof u);
  return u;
}
std::uint16_t bits_of(__half h) {
  std::uint16_t u;
  std::memcpy(&u, &h, sizeof u);
  return u;
}

}  // namespace

TEST_CASE("16-bit rounding: the host helpers give CUDA's own conversions' bits (no GPU needed)") {
  int bf16_wrong = 0, fp16_wrong = 0;
  for (float f : samples()) {
    bf16_wrong += half::bf16_bits(f) != bits_of(__float2bfloat16_rn(f));
    fp16_wrong += half::fp16_bits(f) != bits_of(__float2half_rn(f));
  }
  CHECK(bf16_wrong == 0);
  CHECK(fp16_wrong == 0);
}

TEST_CASE("16-bit rounding: the GPU kernel gives the host helpers' bits") {
  require_gpu();
  const std::vector<float> values = samples();
  const auto n = std::int64_t(values.size());
  cuda::DeviceArray<float> in(n);
  cuda::DeviceArray<std::uint16_t> out(n);
  CUDA_CHECK(cudaMemcpy(in.data(), values.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (const bool bf16 : {true, false}) {
    INFO((bf16 ? "bf16" : "fp16"));
    cuda::round_to_16bit(out.data(), in.data(), n, bf16, nullptr);
    CUDA_CHECK(cudaGetLastError());
    std::vector<std::uint16_t> got(values.size());
    CUDA_CHECK(
        cudaMemcpy(got.data(), out.data(), n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (std::size_t i = 0; i < values.size(); ++i)
      wrong += got[i] != (bf16 ? half::bf16_bits(values[i]) : half::fp16_bits(values[i]));
    CHECK(wrong == 0);
  }
}

TEST_CASE("16-bit products: the model's loss and gradients within 16-bit round-off of the CPU's") {
  require_gpu();
  const test::Reference ref = test::load_reference();
  const int blocks = block_count(ref.model);
  struct Case {
    cuda::MatmulPrecision precision;
    const char* name;
    int major;         // the oldest architecture with its tensor cores
    double tolerance;  // bf16 keeps 8 significant bits, fp16 11
  };
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  for (const Case& c : {Case{cuda::MatmulPrecision::bf16, "bf16", 8, 3e-2},
                        Case{cuda::MatmulPrecision::fp16, "fp16", 7, 5e-3}}) {
    INFO(c.name);
    if (prop.major < c.major) continue;
    Gpt2Stage cpu(ref.model, {0, blocks}, 1, 0, ref.b, ref.t, 1);
    Gpt2Stage gpu(ref.model, {0, blocks}, 1, 0, ref.b, ref.t, 1,
                  cuda::make_cuda_ops({c.precision}));
    for (Gpt2Stage* s : {&cpu, &gpu}) {
      s->load_full(ref.params);
      s->zero_grads();
      s->set_tokens(0, ref.x);
      s->set_targets(0, ref.y);
      for (int b = 0; b < blocks; ++b) s->forward(b, 0);
    }
    CHECK(gpu.loss(0) == doctest::Approx(cpu.loss(0)).epsilon(c.tolerance / 10));
    CHECK(relative_difference(gpu.logits(0), cpu.logits(0)) < c.tolerance);
    for (Gpt2Stage* s : {&cpu, &gpu})
      for (int b = blocks - 1; b >= 0; --b) s->backward(b, 0, false);
    CHECK(relative_difference(gpu.grads(), cpu.grads()) < c.tolerance);
  }
}

TEST_CASE("16-bit products: the operand scratch they hold is what the memory check counts") {
  require_gpu();
  const int n = 6, in = 5, out = 7, b = 2, t = 4, nh = 2, hd = 3;
  const std::int64_t room = 1024;  // elements: more than any operand or result below
  cuda::DeviceArray<float> x(room), w(room), y(room), dx(room), dw(room), att(room), datt(room);
  for (auto* array : {&x, &w, &y, &dx, &dw, &att, &datt})
    CUDA_CHECK(cudaMemset(array->data(), 0, room * sizeof(float)));
  cuda::CudaGemm gemm(nullptr, cuda::MatmulPrecision::fp16);  // tensor cores since Volta
  gemm.linear_forward(y.data(), x.data(), w.data(), nullptr, n, in, out);
  gemm.linear_backward(dx.data(), dw.data(), nullptr, y.data(), x.data(), w.data(), n, in, out,
                       nullptr);
  OperandSpans want = linear_operand_spans(n, in, out);
  CHECK(gemm.half_operands().first == want.first);
  CHECK(gemm.half_operands().second == want.second);
  gemm.attention_forward(y.data(), att.data(), x.data(), b, t, nh, hd);
  gemm.attention_backward(dx.data(), datt.data(), y.data(), att.data(), x.data(), b, t, nh, hd);
  want.cover(attention_operand_spans(t, nh, hd));
  CHECK(gemm.half_operands().first == want.first);
  CHECK(gemm.half_operands().second == want.second);
  CUDA_CHECK(cudaDeviceSynchronize());
}
