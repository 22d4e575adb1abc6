// Memory per rank of one training step, computed from the schedule alone (no simulation), so the
// selector can prune plans before simulating them:
//   static      the model state (schedule.model_state: weights, gradients, optimizer state per
//               ZeRO stage; schedule.static_bytes where a schedule has no split), the gradients
//               twice where the profile's data parallelism keeps a copy in its buckets, and
//               fp32 gradients beside half ones where its mixed-precision optimizer keeps them
//   activations the peak of activation bytes held while walking the rank's stream in order
//               (Forward keeps its activation_bytes, the matching Backward releases them; so GPipe
//               holds all microbatches, 1F1B the in-flight ones, recomputation only block inputs),
//               with the loss's fp32 gradients over the logits that the profile's loss allocates
//               while the head's backward runs, and under recomputation the one layer it rebuilds
//               while that layer's backward runs
//   buffers     the peak of communication buffers held at once: the blocking collective or
//               transfer playing plus every started one not yet waited (overlap=on: gradient
//               buckets in flight, ZeRO-3's prefetched bucket, receives posted early); without
//               starts, the largest collective or point-to-point buffer of the stream
//   framework   the catalog's framework memory profile: the cuBLAS workspace (allocated with the
//               step's tensors), the caching allocator's slack over what is allocated, the CUDA
//               context of the rank's GPU type, and the communicator's device buffers (NCCL:
//               channels x ring neighbours x 2 directions x NCCL_BUFFSIZE per communicator the
//               rank is in, and per pipeline peer)
// What a source measures maps onto these: allocated (torch.cuda.max_memory_allocated) is static +
// activations + buffers + workspace; reserved adds the allocator's slack; the driver's used memory
// (nvidia-smi, cudaMemGetInfo) adds the context and the communication buffers: peak_bytes().
#pragma once
#include <string>
#include <vector>

#include "plan/schedule.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {

struct RankMemory {
  int rank = 0;
  int gpu = 0;           // slice GPU index
  std::string gpu_type;  // GpuType name
  std::string site;
  double weights_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0;
  double static_bytes = 0;       // the three above
  double activation_bytes = 0;   // peak held
  double buffer_bytes = 0;       // communication buffers in flight, peak
  double workspace_bytes = 0;    // cuBLAS workspace
  double slack_bytes = 0;        // the caching allocator's reserve over what is allocated
  double context_bytes = 0;      // CUDA context with the framework's kernels
  double comm_buffer_bytes = 0;  // the communicator's device buffers (NCCL)
  double framework_bytes = 0;    // workspace + slack + context + communicator buffers
  double capacity_bytes = 0;
  double allocated_bytes() const {
    return static_bytes + activation_bytes + buffer_bytes + workspace_bytes;
  }
  double reserved_bytes() const { return allocated_bytes() + slack_bytes; }
  double peak_bytes() const { return reserved_bytes() + context_bytes + comm_buffer_bytes; }
};

struct MemoryEstimate {
  std::vector<RankMemory> ranks;
  bool oom = false;
  int worst_rank = -1;      // the rank with the least headroom (most over, or least free)
  double worst_excess = 0;  // bytes over capacity of the worst rank (<= 0 when it fits)
};

// With the catalog's default framework memory profile, or `profile` where given. Throws
// fabtrain::Error when the plan needs more GPUs than the slice has.
MemoryEstimate estimate_memory(const Schedule& schedule, const Slice& slice,
                               const FrameworkMemory* profile = nullptr);

// The least fraction of a GPU left free over the estimate's ranks (below 0 when one is over).
double least_free_fraction(const MemoryEstimate& estimate);

// The peak of activation bytes held while walking one stream in order, with the loss's gradients
// (loss_gradient_copies of each Backward's logits_gradient_bytes) while a head's backward runs
// and a Backward's rebuilt_bytes while recomputation rebuilds a layer.
double peak_activation_bytes(const std::vector<Instruction>& stream,
                             double loss_gradient_copies = 0);

// The communicator's device buffers of one rank: per group of more than one rank it is in, and
// per pipeline peer it sends to or receives from.
double communicator_buffer_bytes(const Schedule& schedule, int rank,
                                 const CommunicatorProfile& communicator);

}  // namespace fabtrain
