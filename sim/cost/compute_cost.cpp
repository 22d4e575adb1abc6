// The compute roofline: max(FLOPs at peak x efficiency, bytes at bandwidth x efficiency), or,
// where the catalog says kernels run one after the other, the products' time (their FLOPs or
// their own operands' bytes, whichever is longer: one kernel's roofline) plus the element-wise
// kernels' bytes, plus a per-kernel overhead for each kernel the instruction launches (one per
// block where it does not say). The peak and the matmul efficiency follow the precision:
// fp32 the FP32 (SIMT) peak, fp16/bf16/tf32 the tensor-core peak at the tensor-core efficiency.
#include "sim/cost/compute_cost.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "sim/cost/matmul_efficiency.hpp"

namespace fabtrain {

double peak_flops(const GpuType& gpu, Precision precision) {
  double peak = 0;
  switch (precision) {
    case Precision::fp32:
      peak = gpu.peak_fp32_flops;
      break;
    case Precision::fp16:
      peak = gpu.peak_fp16_flops;
      break;
    case Precision::bf16:
      peak = gpu.peak_bf16_flops;
      break;
    case Precision::tf32:
      peak = gpu.peak_tf32_flops;
      break;
  }
  if (!(peak > 0))
    fail("GPU type {} has no {} peak in the catalog (it may not support {})", gpu.name,
         to_string(precision), to_string(precision));
  return peak;
}

namespace {

// What a compute instruction does: all its FLOPs and bytes; of them, the weight products'
// operand bytes, and the attention core's FLOPs and operand bytes (models/costs.hpp).
struct Work {
  double flops = 0, bytes = 0, matmul_bytes = 0, attention_flops = 0, attention_bytes = 0;
  double products_efficiency = 1;  // tile and wave quantization of the weight products
};

// Without serial kernels the instruction is one overlapped roofline. With them: the weight
// products (their FLOPs or their operands, whichever is longer), then the attention core (the
// same, apart: its intensity is far lower), then the element-wise bytes, one after the other.
double roofline(const Work& w, int kernels, double peak, const GpuType& gpu,
                const ComputeParameters& p, bool serial) {
  const double flop_rate = peak * p.matmul_efficiency;
  const double byte_rate = gpu.memory_bandwidth * p.memory_efficiency;
  auto seconds = [](double amount, double rate) { return amount > 0 ? amount / rate : 0; };
  const double overhead = p.kernel_overhead_s * kernels;
  const double attention_flops = std::clamp(w.attention_flops, 0.0, std::max(w.flops, 0.0));
  // The weight products at the rate their shapes keep, the attention core at the full rate.
  const double product_seconds =
      seconds(w.flops - attention_flops, flop_rate * w.products_efficiency);
  if (!serial)
    return std::max(product_seconds + seconds(attention_flops, flop_rate),
                    seconds(w.bytes, byte_rate)) +
           overhead;
  const double attention_bytes = std::clamp(w.attention_bytes, 0.0, std::max(w.bytes, 0.0));
  const double matmul_bytes =
      std::clamp(w.matmul_bytes, 0.0, std::max(w.bytes, 0.0) - attention_bytes);
  const double products = std::max(product_seconds, seconds(matmul_bytes, byte_rate));
  const double core =
      std::max(seconds(attention_flops, flop_rate), seconds(attention_bytes, byte_rate));
  const double elementwise = seconds(w.bytes - matmul_bytes - attention_bytes, byte_rate);
  return products + core + elementwise + overhead;
}

// tile 0: no shape factor (a calibrated efficiency was fitted on the products as measured).
template <typename Step>
Work work_of(const Step& i, const GpuType& gpu, int tile) {
  return {i.flops,           i.bytes,
          i.matmul_bytes,    i.attention_flops,
          i.attention_bytes, products_efficiency(i.products, gpu.sm_count, tile)};
}

// Kernels whose overhead an instruction pays: its own count under serial kernels; otherwise (and
// where it gives none) one per block, the unit calibrate/fit_compute fits the overhead per.
template <typename Step>
int kernels_of(const Step& w, bool serial) {
  return serial && w.kernels > 0 ? w.kernels : std::max(1, w.end - w.begin);
}

// A calibration's matmul efficiency was fitted on the products as they ran (calibrate/fit_compute
// times whole instructions), their tile and wave losses included: its kind takes no shape factor.
bool calibrated_matmul(const Calibration& cal, const std::string& gpu, WorkKind kind) {
  const auto g = cal.compute.find(gpu);
  if (g == cal.compute.end()) return false;
  const auto k = g->second.find(kind);
  return k != g->second.end() && k->second.matmul_efficiency.has_value();
}

// The catalog's product tile where the kind's efficiency is the catalog's; 0 (no shape factor)
// where a calibration fitted it.
int tile_for(const ComputeDefaults& defaults, const Calibration& cal, const std::string& gpu,
             WorkKind kind) {
  return calibrated_matmul(cal, gpu, kind) ? 0 : defaults.matmul_tile;
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

double matmul_efficiency_at(const ComputeDefaults& defaults, const GpuType& gpu,
                            Precision precision) {
  if (precision != Precision::fp32)
    return defaults.tensor_core_matmul_efficiency > 0 ? defaults.tensor_core_matmul_efficiency
                                                      : defaults.matmul_efficiency;
  return gpu.fp32_matmul_efficiency > 0 ? gpu.fp32_matmul_efficiency : defaults.matmul_efficiency;
}

double compute_seconds(const Instruction& instruction, const GpuType& gpu, Precision precision,
                       const ComputeDefaults& defaults, const Calibration& calibration) {
  // Numbers only: the catalog's defaults are not copied per instruction (their source text is
  // long, and this runs for every instruction a search bounds).
  const ComputeParameters base{matmul_efficiency_at(defaults, gpu, precision),
                               defaults.memory_efficiency, defaults.kernel_overhead_s};
  auto parameters = [&](WorkKind kind) { return calibrated(base, calibration, gpu.name, kind); };
  if (const auto* f = std::get_if<Forward>(&instruction)) {
    const bool serial = serial_for(defaults, calibration, gpu.name, WorkKind::forward);
    return roofline(work_of(*f, gpu, tile_for(defaults, calibration, gpu.name, WorkKind::forward)),
                    kernels_of(*f, serial), peak_flops(gpu, precision), gpu,
                    parameters(WorkKind::forward), serial);
  }
  if (const auto* b = std::get_if<Backward>(&instruction)) {
    const bool serial = serial_for(defaults, calibration, gpu.name, WorkKind::backward);
    return roofline(work_of(*b, gpu, tile_for(defaults, calibration, gpu.name, WorkKind::backward)),
                    kernels_of(*b, serial), peak_flops(gpu, precision), gpu,
                    parameters(WorkKind::backward), serial);
  }
  if (const auto* o = std::get_if<OptimizerStep>(&instruction))
    return roofline(Work{0, o->bytes}, 1 + o->kernels, peak_flops(gpu, precision), gpu,
                    parameters(WorkKind::optimizer),
                    serial_for(defaults, calibration, gpu.name, WorkKind::optimizer));
  return 0;
}

}  // namespace fabtrain
