// Tile and wave quantization of matrix products (NVIDIA's Matrix Multiplication Background
// guide): full waves of full tiles keep the whole rate, one token row or one tile too many
// wastes most of a tile or a wave, and the cost model charges a Forward's products by shape.
#include <doctest/doctest.h>

#include "sim/cost/compute_cost.hpp"
#include "sim/cost/matmul_efficiency.hpp"

using namespace fabtrain;

TEST_CASE("a product of whole tiles in whole waves keeps the full rate") {
  // 108 SMs (A100), 128 tiles: a 1152 x 1536 output = 9 x 12 = 108 tiles, one full wave.
  CHECK(shape_efficiency({1152, 1536, 4096}, 108, 128) == doctest::Approx(1));
  CHECK(shape_efficiency({1152, 1536, 4096}, 0, 128) == 1);  // SMs unknown: not charged
  CHECK(shape_efficiency({1152, 1536, 4096}, 108, 0) == 1);
}

TEST_CASE("a partial tile and a partial wave cost as much as full ones") {
  // 129 rows: 2 row tiles for 129 rows of work (tile fill 129/256).
  CHECK(shape_efficiency({129, 128 * 54, 1024}, 108, 128) == doctest::Approx(129.0 / 256));
  // 109 tiles on 108 SMs: two waves for 109 tiles.
  CHECK(shape_efficiency({128, 128 * 109, 1024}, 108, 128) == doctest::Approx(109.0 / 216));
  // A skinny product (one 1024-token sequence under tp=8 of a 1600-wide layer, 200 columns):
  // 8 x 2 tiles of 128 on 108 SMs; K = 1600 split in 6 slices (108 / 16, rounded down): 96
  // blocks in one wave, and the second column tile 72 of 128 full.
  const double skinny = shape_efficiency({1024, 200, 1600}, 108, 128);
  CHECK(skinny == doctest::Approx((1024.0 * 200) / (16 * 128 * 128) * (96.0 / 108)));
  // A short K limits the split: K = 256 gives 2 slices, 32 blocks on 108 SMs.
  CHECK(shape_efficiency({1024, 200, 256}, 108, 128) ==
        doctest::Approx((1024.0 * 200) / (16 * 128 * 128) * (32.0 / 108)));
}

TEST_CASE("an instruction's products are weighted by their FLOPs") {
  const MatmulShape full{1152, 1536, 4096, 1}, half{128, 128 * 109, 1024, 1};
  const double e = products_efficiency({full, half}, 108, 128);
  const double f1 = full.flops(), f2 = half.flops();
  CHECK(e == doctest::Approx((f1 + f2) / (f1 + f2 / (109.0 / 216))));
  CHECK(products_efficiency({}, 108, 128) == 1);
}

namespace {

// A GPU of 108 SMs at 10 TFLOP/s FP32 and 100 TFLOP/s fp16, and defaults whose fp16 products
// reach 0.8 of the peak with no launch overhead.
GpuType gpu_of_108_sms() {
  GpuType g;
  g.name = "GPU_Q";
  g.peak_fp32_flops = 10e12;
  g.peak_fp16_flops = 100e12;
  g.memory_bandwidth = 1e12;
  g.sm_count = 108;
  return g;
}

ComputeDefaults tensor_core_defaults() {
  ComputeDefaults d;
  d.matmul_efficiency = 0.5;
  d.tensor_core_matmul_efficiency = 0.8;
  d.kernel_overhead_s = 0;
  return d;
}

}  // namespace

TEST_CASE("the cost model charges a Forward's products their quantization on the GPU's SMs") {
  GpuType g = gpu_of_108_sms();
  ComputeDefaults d = tensor_core_defaults();
  d.serial_kernels = true;
  d.matmul_tile = 128;
  Forward f;
  f.begin = 0;
  f.end = 1;
  f.kernels = 1;
  add_product(f.products, 128, 128 * 109, 1024);
  f.flops = f.products[0].flops();
  const double full = f.flops / (100e12 * 0.8);
  CHECK(compute_seconds(f, g, Precision::fp16, d, {}) == doctest::Approx(full * 216.0 / 109));
  g.sm_count = 0;  // unknown SMs: the old roofline
  CHECK(compute_seconds(f, g, Precision::fp16, d, {}) == doctest::Approx(full));
}

TEST_CASE(
    "a calibrated matmul efficiency, fitted on the products as they ran, takes no shape "
    "factor") {
  GpuType g = gpu_of_108_sms();
  ComputeDefaults d = tensor_core_defaults();
  d.matmul_tile = 128;
  Forward f;
  f.begin = 0;
  f.end = 1;
  add_product(f.products, 128, 128 * 109, 1024);  // 109 tiles on 108 SMs: two waves
  f.flops = f.products[0].flops();
  Calibration cal;
  cal.compute["GPU_Q"][WorkKind::forward].matmul_efficiency = 0.4;
  CHECK(compute_seconds(f, g, Precision::fp16, d, cal) ==
        doctest::Approx(f.flops / (100e12 * 0.4)));
  // a calibration of the memory side only keeps the catalog's efficiency and its shape factor
  Calibration memory_only;
  memory_only.compute["GPU_Q"][WorkKind::forward].memory_efficiency = 0.9;
  CHECK(compute_seconds(f, g, Precision::fp16, d, memory_only) ==
        doctest::Approx(f.flops / (100e12 * 0.8) * 216.0 / 109));
}

TEST_CASE("an optimizer step pays a launch for each of its kernels") {
  GpuType g;
  g.name = "GPU_Q";
  g.peak_fp32_flops = 10e12;
  g.memory_bandwidth = 1e12;
  ComputeDefaults d;
  d.memory_efficiency = 0.5;
  d.kernel_overhead_s = 1e-5;
  OptimizerStep fused{1e6, 1e9};
  OptimizerStep looped = fused;
  looped.kernels = 100;  // an eager loop over parameter tensors
  const double one = compute_seconds(fused, g, Precision::fp32, d, {});
  CHECK(one == doctest::Approx(1e9 / 0.5e12 + 1e-5));
  CHECK(compute_seconds(looped, g, Precision::fp32, d, {}) == doctest::Approx(one + 100 * 1e-5));
}
