// The compute roofline: max(FLOPs at peak x efficiency, bytes at bandwidth x efficiency) plus a
// per-kernel overhead for each block.
#include "sim/cost/compute_cost.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace fabtrain {

double peak_flops(const GpuType& gpu, Precision precision) {
  double peak = 0;
  switch (precision) {
    case Precision::fp32: peak = gpu.peak_fp32_flops; break;
    case Precision::fp16: peak = gpu.peak_fp16_flops; break;
    case Precision::bf16: peak = gpu.peak_bf16_flops; break;
  }
  if (!(peak > 0))
    fail("GPU type {} has no {} peak in the catalog (it may not support {})", gpu.name,
         to_string(precision), to_string(precision));
  return peak;
}

namespace {

double roofline(double flops, double bytes, int kernels, double peak, const GpuType& gpu,
                const ComputeParameters& p) {
  const double math = flops > 0 ? flops / (peak * p.matmul_efficiency) : 0;
  const double memory = bytes > 0 ? bytes / (gpu.memory_bandwidth * p.memory_efficiency) : 0;
  return std::max(math, memory) + p.kernel_overhead_s * kernels;
}

}  // namespace

double compute_seconds(const Instruction& instruction, const GpuType& gpu, Precision precision,
                       const ComputeDefaults& defaults, const Calibration& calibration) {
  if (const auto* f = std::get_if<Forward>(&instruction))
    return roofline(f->flops, f->bytes, std::max(1, f->end - f->begin), peak_flops(gpu, precision),
                    gpu, compute_parameters(defaults, calibration, gpu.name, WorkKind::forward));
  if (const auto* b = std::get_if<Backward>(&instruction))
    return roofline(b->flops, b->bytes, std::max(1, b->end - b->begin), peak_flops(gpu, precision),
                    gpu, compute_parameters(defaults, calibration, gpu.name, WorkKind::backward));
  if (const auto* o = std::get_if<OptimizerStep>(&instruction))
    return roofline(0, o->bytes, 1, peak_flops(gpu, precision), gpu,
                    compute_parameters(defaults, calibration, gpu.name, WorkKind::optimizer));
  return 0;
}

}  // namespace fabtrain
