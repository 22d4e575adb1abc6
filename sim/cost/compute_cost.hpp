// The seconds a compute instruction (forward, backward, optimizer) takes on a GPU type: a
// roofline over the catalog's peaks, with efficiencies and per-kernel overhead from the catalog's
// defaults or a calibration. Shared by the simulator, its lower bound, calibration and the
// executor's replay (which sleeps for it), so all four charge the same time.
// Not here: communication (sim/), or anything SimGrid.
#pragma once
#include "models/costs.hpp"
#include "plan/schedule.hpp"
#include "platforms/catalog.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain {

// Seconds one compute instruction takes on a GPU type; 0 for every other instruction.
double compute_seconds(const Instruction& instruction, const GpuType& gpu, Precision precision,
                       const ComputeDefaults& defaults, const Calibration& calibration);
// The matmul efficiency a GPU type's products reach at a precision before any calibration:
// fp16/bf16/tf32 the catalog's tensor-core one (where it gives one), fp32 the GPU type's own
// (GpuType::fp32_matmul_efficiency) where it has one, else the catalog's.
double matmul_efficiency_at(const ComputeDefaults& defaults, const GpuType& gpu,
                            Precision precision);
// Peak FLOP/s of a GPU type at a precision; throws when the GPU lacks it (bf16 before Ampere).
double peak_flops(const GpuType& gpu, Precision precision);

}  // namespace fabtrain
