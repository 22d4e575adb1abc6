// The compute roofline's choice of peak and efficiency by precision: fp16/bf16 products run on
// tensor cores at the catalog's tensor-core efficiency, fp32 ones on the FP32 peak; a catalog
// without a tensor-core efficiency keeps one efficiency for both (the behaviour before it).
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "sim/cost/compute_cost.hpp"

using namespace fabtrain;

namespace {

// The catalog's A100 without its own FP32 efficiency, so a test's defaults apply.
GpuType a100_on_defaults() {
  GpuType g = builtin_catalog().gpu("GPU_A100_80GB");
  g.fp32_matmul_efficiency = 0;
  return g;
}

Forward work(double flops, double bytes) {
  Forward f;
  f.begin = 0;
  f.end = 1;
  f.flops = flops;
  f.bytes = bytes;
  return f;
}

}  // namespace

TEST_CASE("bf16 on an A100 runs at the tensor-core peak and the tensor-core efficiency") {
  const Catalog& cat = builtin_catalog();
  const GpuType& a100 = cat.gpu("GPU_A100_80GB");
  const ComputeDefaults& d = cat.compute;
  REQUIRE(d.tensor_core_matmul_efficiency > 0);
  const double F = 1e13;
  const double bf16 = compute_seconds(work(F, 0), a100, Precision::bf16, d, {});
  const double fp32 = compute_seconds(work(F, 0), a100, Precision::fp32, d, {});
  CHECK(bf16 ==
        doctest::Approx(F / (312e12 * d.tensor_core_matmul_efficiency) + d.kernel_overhead_s));
  // fp32: the A100's own measured FP32 fraction, where the catalog gives one
  const double fp32_efficiency =
      a100.fp32_matmul_efficiency > 0 ? a100.fp32_matmul_efficiency : d.matmul_efficiency;
  CHECK(fp32 == doctest::Approx(F / (19.5e12 * fp32_efficiency) + d.kernel_overhead_s));
  CHECK(fp32 > 10 * bf16);
  // A memory-bound block is no faster in bf16: bandwidth, not the tensor cores, bounds it.
  const double B = 1e11;
  CHECK(compute_seconds(work(1e9, B), a100, Precision::bf16, d, {}) ==
        doctest::Approx(B / (a100.memory_bandwidth * d.memory_efficiency) + d.kernel_overhead_s));
}

TEST_CASE(
    "without a tensor-core efficiency fp16 takes the FP32 one, and a calibration overrides both") {
  const GpuType& v100 = builtin_catalog().gpu("GPU_V100");
  ComputeDefaults d;
  d.matmul_efficiency = 0.5;
  d.kernel_overhead_s = 0;
  CHECK(compute_seconds(work(1e12, 0), v100, Precision::fp16, d, {}) ==
        doctest::Approx(1e12 / (125e12 * 0.5)));
  d.tensor_core_matmul_efficiency = 0.8;
  CHECK(compute_seconds(work(1e12, 0), v100, Precision::fp16, d, {}) ==
        doctest::Approx(1e12 / (125e12 * 0.8)));
  Calibration cal;
  cal.compute["GPU_V100"][WorkKind::forward].matmul_efficiency = 0.25;
  CHECK(compute_seconds(work(1e12, 0), v100, Precision::fp16, d, cal) ==
        doctest::Approx(1e12 / (125e12 * 0.25)));
}

TEST_CASE(
    "serial kernels: a block's products and element-wise traffic add up instead of overlapping") {
  const GpuType a100 = a100_on_defaults();
  ComputeDefaults d;
  d.matmul_efficiency = 0.5;
  d.memory_efficiency = 0.5;
  d.kernel_overhead_s = 0;
  const double F = 1e12, B = 1e10;
  const double math = F / (19.5e12 * 0.5), memory = B / (a100.memory_bandwidth * 0.5);
  CHECK(compute_seconds(work(F, B), a100, Precision::fp32, d, {}) ==
        doctest::Approx(std::max(math, memory)));
  d.serial_kernels = true;
  CHECK(compute_seconds(work(F, B), a100, Precision::fp32, d, {}) ==
        doctest::Approx(math + memory));
}

TEST_CASE(
    "serial kernels: the products' own operands overlap their FLOPs, element-wise bytes add") {
  const GpuType a100 = a100_on_defaults();
  ComputeDefaults d;
  d.matmul_efficiency = 0.5;
  d.memory_efficiency = 0.5;
  d.kernel_overhead_s = 1e-5;
  d.serial_kernels = true;
  const double F = 1e12, rate = a100.memory_bandwidth * 0.5, math = F / (19.5e12 * 0.5);
  Forward f = work(F, 3e10);
  f.matmul_bytes = 1e10;  // under the products' FLOPs: hidden
  f.kernels = 7;
  CHECK(compute_seconds(f, a100, Precision::fp32, d, {}) ==
        doctest::Approx(math + 2e10 / rate + 7 * 1e-5));
  f.matmul_bytes = 2.9e10;  // operands longer than the FLOPs: the product is memory-bound
  CHECK(compute_seconds(f, a100, Precision::fp32, d, {}) ==
        doctest::Approx(std::max(math, 2.9e10 / rate) + 0.1e10 / rate + 7 * 1e-5));
  // The attention core is a roofline of its own: here its scores' bytes outlast its FLOPs.
  Forward g = work(F, 4e10);
  g.matmul_bytes = 1e10;
  g.attention_flops = 2e11;
  g.attention_bytes = 2.5e10;
  g.kernels = 7;
  const double flop_rate = 19.5e12 * 0.5;
  CHECK(compute_seconds(g, a100, Precision::fp32, d, {}) ==
        doctest::Approx(std::max(0.8e12 / flop_rate, 1e10 / rate) +
                        std::max(2e11 / flop_rate, 2.5e10 / rate) + 0.5e10 / rate + 7 * 1e-5));
  // Overlapped (not serial): one roofline, and the overhead per block, as calibrations fit it.
  d.serial_kernels = false;
  CHECK(compute_seconds(f, a100, Precision::fp32, d, {}) ==
        doctest::Approx(std::max(math, 3e10 / rate) + 1e-5));
}

TEST_CASE("a calibrated kind keeps the overlapped roofline its efficiencies were fitted under") {
  const GpuType a100 = a100_on_defaults();
  ComputeDefaults d;
  d.kernel_overhead_s = 0;
  d.serial_kernels = true;
  Calibration cal;
  cal.compute["GPU_A100_80GB"][WorkKind::forward].matmul_efficiency = 0.5;
  cal.compute["GPU_A100_80GB"][WorkKind::forward].memory_efficiency = 0.5;
  const double F = 1e12, B = 1e10;
  const double math = F / (19.5e12 * 0.5), memory = B / (a100.memory_bandwidth * 0.5);
  CHECK(compute_seconds(work(F, B), a100, Precision::fp32, d, cal) ==
        doctest::Approx(std::max(math, memory)));
}

TEST_CASE("tf32: fp32 tensors with products on TF32 tensor cores, where the GPU has them") {
  const Catalog& cat = builtin_catalog();
  const ComputeDefaults& d = cat.compute;
  const double F = 1e13;
  CHECK(compute_seconds(work(F, 0), cat.gpu("GPU_A100_80GB"), Precision::tf32, d, {}) ==
        doctest::Approx(F / (156e12 * d.tensor_core_matmul_efficiency) + d.kernel_overhead_s));
  CHECK(element_bytes(Precision::tf32) == 4);
  CHECK_THROWS_WITH_AS(compute_seconds(work(F, 0), cat.gpu("GPU_V100"), Precision::tf32, d, {}),
                       doctest::Contains("no tf32 peak"), Error);
}
