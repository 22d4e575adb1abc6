// Fitting the communication corrections (sim/cost/calibration.hpp, collectives: and p2p:) to whole
// steps: each run record is simulated with its plan, model, batch and path round trip on the slice
// it ran on, and the corrections of the ops its steps call are searched so that the simulated step
// times match the measured ones (median step after the first). Per-call fits (fit_collectives.hpp)
// see each call through the ranks' unaligned clocks; the step is what a prediction is judged by.
// The search: coordinate descent over latency_terms [1, 20], bandwidth_factor [0, 5] and
// overhead_s [0, 50 ms] of each op (and small_latency_terms [1, 20] when the op has small calls),
// and when the runs send point to point (pipelines) the p2p latency_terms [1, 20] and overhead_s
// [0, 50 ms], minimising the mean squared log ratio predicted / measured, starting from the
// calibration's corrections (or 1, 1, 0) with steps halving until 1%. Compute and link parameters
// are taken as they are: fit them first. Not here: reading the records (inputs.hpp) or choosing
// which runs to hold out.
#pragma once
#include <string>
#include <vector>

#include "calibrate/inputs.hpp"
#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain::calib {

struct StepFitRun {
  const RunData* run = nullptr;
  double path_rtt_s = 0;  // the round trip the path added (the slice's wide-area override)
};

struct StepFitResult {
  std::vector<std::string> labels;        // one per run: its file
  std::vector<double> measured_s;         // median step after the first
  std::vector<double> before_s, after_s;  // simulated with the corrections before and after
  int simulations = 0;
};

// Throws fabtrain::Error when a run lacks batch, seq or model fields, or does not fit the slice.
// Calls of at most small_bytes get their own latency terms (CollectiveCalibration::small_bytes).
StepFitResult fit_collectives_to_steps(const Slice& slice, const std::vector<StepFitRun>& runs,
                                       Calibration& calibration, double small_bytes = 0);

}  // namespace fabtrain::calib
