// Memory a rank's stage will take, estimated before anything large is allocated, and what the
// host has: a model or batch that cannot fit is refused with both numbers instead of dying in
// std::bad_alloc or the kernel's OOM killer halfway through setup.
#pragma once
#include <optional>

#include "models/model_spec.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

// What the CPU executor allocates for one stage of the plan, in fp32: the stage's weights and
// gradients (its blocks' tensor-parallel shard and, last of several stages, the tied wte copy),
// AdamW's m and v of what the rank owns (a 1/dp shard under ZeRO), under ZeRO the shard's
// parameters, gradients and scratch, the packed full-size gradient copy and the packed buffers of
// one reduce-scatter or all-gather in flight, the tied embedding's exchange buffer on a stage
// holding wte, the activations of plan.mb microbatches, and the full parameter vector gathered
// for checkpoints.
double stage_memory_bytes(const ModelSpec& model, const Plan& plan, int stage, int microbatch,
                          int seq);

// MemAvailable of /proc/meminfo; nullopt where it cannot be read.
std::optional<double> host_available_bytes();

// The peak resident set of this process so far in bytes (Linux VmHWM of /proc/self/status, else
// getrusage's ru_maxrss); nullopt where neither can be read.
std::optional<double> peak_resident_bytes();

// Fails when `ranks_on_host` stages of `bytes` each exceed what the host has available.
void check_fits_host(double bytes, int ranks_on_host);

}  // namespace fabtrain
