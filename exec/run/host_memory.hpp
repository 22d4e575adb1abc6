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

// A stage's memory by where it may live, in fp32. `state`: the stage's weights and gradients (its
// blocks' tensor-parallel shard and, last of several stages, the tied wte copy), AdamW's m and v
// of what the rank owns (a 1/dp shard under ZeRO), under ZeRO the shard's parameters, gradients
// and scratch, the packed full-size gradient copy and the packed buffers of one reduce-scatter or
// all-gather in flight, and the tied embedding's exchange buffer on a stage holding wte.
// `half_operands`: under a bf16 or fp16 plan, the 16-bit copies of the operands its products
// round into (exec/model/half_operands.hpp; only the CUDA backend trains in them).
struct StageMemory {
  double state = 0;
  double activations = 0;    // the activations of plan.mb microbatches
  double full = 0;           // the full parameter vector gathered for checkpoints (host always)
  double half_operands = 0;  // on the device only
};

StageMemory stage_memory(const ModelSpec& model, const Plan& plan, int stage, int microbatch,
                         int seq);

// What the host must hold for it: everything when the backend computes in host memory
// (Gpt2Ops::host_memory()), all but the activations otherwise.
double host_need_bytes(const StageMemory& memory, bool backend_uses_host_memory);

// What the CPU executor allocates for one stage of the plan: all of stage_memory.
double stage_memory_bytes(const ModelSpec& model, const Plan& plan, int stage, int microbatch,
                          int seq);

// What the device must hold for it (a backend whose memory is not the host's): the model state,
// the activations and the 16-bit operands (the backend's other scratch and the communicator's
// buffers come on top).
double device_need_bytes(const StageMemory& memory);
// Fails when the stage's device need exceeds the free device memory, with both and the total.
void check_fits_device(double need, double free_bytes, double total_bytes);

// MemAvailable of /proc/meminfo; nullopt where it cannot be read.
std::optional<double> host_available_bytes();

// The peak resident set of this process so far in bytes (Linux VmHWM of /proc/self/status, else
// getrusage's ru_maxrss); nullopt where neither can be read.
std::optional<double> peak_resident_bytes();

// Fails when `ranks_on_host` stages of `bytes` each exceed what the host has available.
void check_fits_host(double bytes, int ranks_on_host);

}  // namespace fabtrain
