// Memory a rank's stage will take, estimated before anything large is allocated, and what the
// host has: a model or batch that cannot fit is refused with both numbers instead of dying in
// std::bad_alloc or the kernel's OOM killer halfway through setup.
#pragma once
#include <optional>

#include "models/model_spec.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

// fp32 weights, gradients and AdamW m and v of the stage's blocks, the activations of `mb`
// microbatches, and the full parameter vector gathered for checkpoints.
double stage_memory_bytes(const ModelSpec& model, const BlockRange& blocks, int tp, int microbatch,
                          int seq, int mb, bool recompute);

// MemAvailable of /proc/meminfo; nullopt where it cannot be read.
std::optional<double> host_available_bytes();

// Fails when `ranks_on_host` stages of `bytes` each exceed what the host has available.
void check_fits_host(double bytes, int ranks_on_host);

}  // namespace fabtrain
