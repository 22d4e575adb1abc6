// Walking each rank's stream to find the activation peak, and adding the rest of its memory.
#include "sim/memory.hpp"

#include <algorithm>
#include <map>

#include "common/error.hpp"
#include "sim/slice_devices.hpp"

namespace fabtrain {

double peak_activation_bytes(const std::vector<Instruction>& stream) {
  double held = 0, peak = 0;
  for (const auto& instruction : stream) {
    if (const auto* f = std::get_if<Forward>(&instruction)) {
      held += f->activation_bytes;
      peak = std::max(peak, held);
    } else if (const auto* b = std::get_if<Backward>(&instruction)) {
      // Recomputation rebuilds the full activations of the block range before releasing them;
      // the schedule's numbers already include what is rebuilt, so only the release is modelled.
      held = std::max(0.0, held - b->activation_bytes);
    }
  }
  return peak;
}

namespace {

// The peak over the stream of the communication buffers held at once: those of started requests
// not yet waited (a prefetched ZeRO-3 bucket, receives posted early, gradient buckets in flight)
// plus the buffer of the blocking transfer or collective playing now.
double buffers_in_flight(const std::vector<Instruction>& stream) {
  std::map<int, double> started;  // request -> bytes
  double held = 0, peak = 0;
  for (const auto& instruction : stream) {
    std::visit(
        [&](const auto& i) {
          using T = std::decay_t<decltype(i)>;
          if constexpr (std::is_same_v<T, Send> || std::is_same_v<T, Recv> ||
                        std::is_same_v<T, Collective>) {
            if (i.request >= 0) {
              started[i.request] = i.bytes;
              held += i.bytes;
              peak = std::max(peak, held);
            } else {
              peak = std::max(peak, held + i.bytes);
            }
          } else if constexpr (std::is_same_v<T, Wait>) {
            const auto it = started.find(i.request);
            if (it != started.end()) {
              held -= it->second;
              started.erase(it);
            }
          }
        },
        instruction);
  }
  return peak;
}

}  // namespace

MemoryEstimate estimate_memory(const Schedule& schedule, const Slice& slice) {
  const auto devices = slice_devices(slice, schedule);
  MemoryEstimate estimate;
  const double framework = slice.catalog ? slice.catalog->compute.framework_memory_bytes : 0;
  double worst_headroom = 0;
  for (int r = 0; r < schedule.world; ++r) {
    const auto& d = devices[r];
    RankMemory m;
    m.rank = r;
    m.gpu = d.gpu;
    m.gpu_type = d.type->name;
    m.site = d.site;
    m.static_bytes = r < int(schedule.static_bytes.size()) ? schedule.static_bytes[r] : 0;
    m.activation_bytes = peak_activation_bytes(schedule.ranks[r]);
    m.buffer_bytes = buffers_in_flight(schedule.ranks[r]);
    m.framework_bytes = framework;
    m.capacity_bytes = d.type->memory_bytes;
    const double headroom = m.capacity_bytes - m.peak_bytes();
    if (estimate.worst_rank < 0 || headroom < worst_headroom) {
      estimate.worst_rank = r;
      worst_headroom = headroom;
    }
    estimate.ranks.push_back(std::move(m));
  }
  estimate.worst_excess = -worst_headroom;
  estimate.oom = estimate.worst_rank >= 0 && worst_headroom < 0;
  return estimate;
}

}  // namespace fabtrain
