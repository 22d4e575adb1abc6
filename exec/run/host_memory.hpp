// Memory a rank's stage will take, estimated before anything large is allocated, and what the
// host has: a model or batch that cannot fit is refused with both numbers instead of dying in
// std::bad_alloc or the kernel's OOM killer halfway through setup. A backend whose memory is not
// the host's (CUDA) keeps its activations on the device: the host holds only what stays there
// (the stage's parameter and gradient mirrors, AdamW's moments, the gathered full vector).
#pragma once
#include <optional>

#include "models/model_spec.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

// A stage's memory by where it may live.
struct StageMemory {
  double state = 0;        // fp32 weights, gradients and AdamW m and v of the stage's blocks
  double activations = 0;  // the activations of `mb` microbatches
  double full = 0;         // the full parameter vector gathered for checkpoints (host always)
};

StageMemory stage_memory(const ModelSpec& model, const BlockRange& blocks, int tp, int microbatch,
                         int seq, int mb, bool recompute);

// What the host must hold for it: everything when the backend computes in host memory
// (Gpt2Ops::host_memory()), all but the activations otherwise.
double host_need_bytes(const StageMemory& memory, bool backend_uses_host_memory);

// What the device must hold for it (a backend whose memory is not the host's): the model state
// and the activations (the backend's scratch and the communicator's buffers come on top).
double device_need_bytes(const StageMemory& memory);
// Fails when the stage's device need exceeds the free device memory, with both and the total.
void check_fits_device(double need, double free_bytes, double total_bytes);

// MemAvailable of /proc/meminfo; nullopt where it cannot be read.
std::optional<double> host_available_bytes();

// Fails when `ranks_on_host` stages of `bytes` each exceed what the host has available.
void check_fits_host(double bytes, int ranks_on_host);

}  // namespace fabtrain
