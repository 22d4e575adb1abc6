// Fitting the simulator's compute parameters for one device type, per instruction kind
// (forward, backward, optimizer): the matmul efficiency (FLOP/s reached over the catalog's
// peak), the memory efficiency (bytes/s over the catalog's bandwidth) and the per-kernel
// overhead (per block of a Forward/Backward, as the simulator counts kernels).
//  - From a bench file alone: the model's forward (backward) instructions take, on a CPU, their
//    matrix products at the measured GEMM rate plus their element-wise bytes at the measured
//    memory rate, one after the other. The simulator's roofline takes the larger of the two, so
//    the sum is folded into an effective matmul efficiency for the bench's model.
//  - From run records: least squares of each step's summed instruction durations of one kind
//    on its slowest rank against the sums of the roofline's
//    features, t = a*flops + c*blocks (compute-bound) or t = b*bytes + c*blocks (memory-bound),
//    non-negative, relative residuals; the better of the two is kept.
// Predictions always go through the simulator's own formula (sim's compute_seconds).
// Not here: links (calibrate/fit_links.hpp), reading files (calibrate/inputs.hpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "calibrate/inputs.hpp"
#include "platforms/catalog.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain::calib {

using KindCalibration = std::map<WorkKind, ComputeCalibration>;

KindCalibration fit_compute_from_bench(const BenchData& bench, const GpuType& device,
                                       std::vector<std::string>& notes);

struct LinearFit {
  std::string form;         // "flops" or "bytes": which feature carries the slope
  double slope = 0;         // seconds per FLOP or per byte
  double per_block_s = 0;   // seconds per block (kernel overhead)
  double rms_relative = 0;  // root mean square of (fit - measured) / measured
  int samples = 0;
};
// Non-negative weighted least squares of t ~ slope*x + per_block*blocks over the samples.
LinearFit fit_linear(const std::vector<ComputeSample>& samples, bool use_flops);

// Refines `base` with the samples of every kind present; kinds without samples keep base.
KindCalibration fit_compute_from_runs(const std::vector<RunData>& runs, const GpuType& device,
                                      const KindCalibration& base,
                                      std::vector<LinearFit>* fits = nullptr);

// Seconds the simulator predicts for one measured instruction under a calibration.
double predict_seconds(const ComputeSample& sample, const GpuType& device,
                       const KindCalibration& cal);

// Prediction error of one run: per kind the mean per-step sum of durations, and the step time
// (per rank: predicted compute + measured communication and loads; the slowest rank).
struct KindError {
  std::string kind;
  double measured_s = 0, predicted_s = 0;
};
struct RunError {
  std::string run;
  double measured_step_s = 0, predicted_step_s = 0;
  std::vector<KindError> kinds;
};
RunError prediction_error(const RunData& run, const GpuType& device, const KindCalibration& cal);

}  // namespace fabtrain::calib
