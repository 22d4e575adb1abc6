// Memory per rank of one training step, computed from the schedule alone (no simulation), so the
// selector can prune plans before simulating them:
//   static      schedule.static_bytes (weights, gradients, optimizer state per ZeRO stage)
//   activations the peak of activation bytes held while walking the rank's stream in order
//               (Forward keeps its activation_bytes, the matching Backward releases them; so GPipe
//               holds all microbatches, 1F1B the in-flight ones, recomputation only block inputs)
//   buffers     the peak of communication buffers held at once: the blocking collective or
//               transfer playing plus every started one not yet waited (overlap=on: gradient
//               buckets in flight, ZeRO-3's prefetched bucket, receives posted early); without
//               starts, the largest collective or point-to-point buffer of the stream
//   framework   the CUDA context and framework overhead of the catalog
// Not here: fragmentation of the allocator, which a calibration of framework memory absorbs.
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
  double static_bytes = 0;
  double activation_bytes = 0;  // peak held
  double buffer_bytes = 0;
  double framework_bytes = 0;
  double capacity_bytes = 0;
  double peak_bytes() const {
    return static_bytes + activation_bytes + buffer_bytes + framework_bytes;
  }
};

struct MemoryEstimate {
  std::vector<RankMemory> ranks;
  bool oom = false;
  int worst_rank = -1;      // the rank with the least headroom (most over, or least free)
  double worst_excess = 0;  // bytes over capacity of the worst rank (<= 0 when it fits)
};

// Throws fabtrain::Error when the plan needs more GPUs than the slice has.
MemoryEstimate estimate_memory(const Schedule& schedule, const Slice& slice);

// The peak of activation bytes held while walking one stream in order.
double peak_activation_bytes(const std::vector<Instruction>& stream);

}  // namespace fabtrain
