// The compute roofline: max(FLOPs at peak x efficiency, bytes at bandwidth x efficiency), or
// their sum where the catalog says kernels run one after the other, plus a per-kernel overhead
// for each block. The peak and the matmul efficiency follow the precision:
// fp32 the FP32 (SIMT) peak, fp16/bf16/tf32 the tensor-core peak at the tensor-core efficiency.
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
    case Precision::tf32: peak = gpu.peak_tf32_flops; break;
  }
  if (!(peak > 0))
    fail("GPU type {} has no {} peak in the catalog (it may not support {})", gpu.name,
         to_string(precision), to_string(precision));
  return peak;
}

namespace {

double roofline(double flops, double bytes, int kernels, double peak, const GpuType& gpu,
                const ComputeParameters& p, bool serial) {
  const double math = flops > 0 ? flops / (peak * p.matmul_efficiency) : 0;
  const double memory = bytes > 0 ? bytes / (gpu.memory_bandwidth * p.memory_efficiency) : 0;
  return (serial ? math + memory : std::max(math, memory)) + p.kernel_overhead_s * kernels;
}

// A calibration's efficiencies were fitted under the overlapped roofline (calibrate/fit_compute
// folds element-wise time into them), so a calibrated kind is played that way.
bool serial_for(const ComputeDefaults& defaults, const Calibration& cal, const std::string& gpu,
                WorkKind kind) {
  if (!defaults.serial_kernels) return false;
  const auto g = cal.compute.find(gpu);
  if (g == cal.compute.end()) return true;
  const auto k = g->second.find(kind);
  return k == g->second.end() || (!k->second.matmul_efficiency && !k->second.memory_efficiency);
}

}  // namespace

ComputeDefaults defaults_for(const ComputeDefaults& defaults, Precision precision) {
  ComputeDefaults d = defaults;
  if (precision != Precision::fp32 && defaults.tensor_core_matmul_efficiency > 0)
    d.matmul_efficiency = defaults.tensor_core_matmul_efficiency;
  return d;
}

double compute_seconds(const Instruction& instruction, const GpuType& gpu, Precision precision,
                       const ComputeDefaults& catalog_defaults, const Calibration& calibration) {
  // fp16/bf16/tf32 products run on tensor cores, which reach their own fraction of their peak.
  const ComputeDefaults defaults = defaults_for(catalog_defaults, precision);
  if (const auto* f = std::get_if<Forward>(&instruction))
    return roofline(f->flops, f->bytes, std::max(1, f->end - f->begin), peak_flops(gpu, precision),
                    gpu, compute_parameters(defaults, calibration, gpu.name, WorkKind::forward),
                    serial_for(defaults, calibration, gpu.name, WorkKind::forward));
  if (const auto* b = std::get_if<Backward>(&instruction))
    return roofline(b->flops, b->bytes, std::max(1, b->end - b->begin), peak_flops(gpu, precision),
                    gpu, compute_parameters(defaults, calibration, gpu.name, WorkKind::backward),
                    serial_for(defaults, calibration, gpu.name, WorkKind::backward));
  if (const auto* o = std::get_if<OptimizerStep>(&instruction))
    return roofline(0, o->bytes, 1, peak_flops(gpu, precision), gpu,
                    compute_parameters(defaults, calibration, gpu.name, WorkKind::optimizer),
                    serial_for(defaults, calibration, gpu.name, WorkKind::optimizer));
  return 0;
}

}  // namespace fabtrain
