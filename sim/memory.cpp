// Walking each rank's stream to find the activation peak, and adding the rest of its memory.
#include "sim/memory.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "common/error.hpp"
#include "models/costs.hpp"
#include "sim/slice_devices.hpp"

namespace fabtrain {

double peak_activation_bytes(const std::vector<Instruction>& stream, double loss_gradient_copies) {
  double held = 0, peak = 0;
  for (const auto& instruction : stream) {
    if (const auto* f = std::get_if<Forward>(&instruction)) {
      held += f->activation_bytes;
      peak = std::max(peak, held);
    } else if (const auto* b = std::get_if<Backward>(&instruction)) {
      // The loss's gradients over the logits live beside everything kept, until the head's
      // backward has passed them on; later in the same backward, recomputation rebuilds one
      // layer's activations at a time (Chen et al. 2016, 'Training Deep Nets with Sublinear
      // Memory Cost', section 3: the peak is the kept checkpoints plus one segment rebuilt).
      peak = std::max(
          peak, held + std::max(loss_gradient_copies * b->logits_gradient_bytes, b->rebuilt_bytes));
      held = std::max(0.0, held - b->activation_bytes);
    }
  }
  return peak;
}

namespace {

// The peak over the stream of the communication buffers held at once: those of started requests
// not yet waited (a prefetched ZeRO-3 bucket, receives posted early, gradient buckets in flight)
// plus the buffer of the blocking transfer or collective playing now. Data parallelism's
// all-reduce runs in place, on the gradients or on the buckets' copy of them that the profile
// counts with the gradients, so it holds no buffer of its own.
double buffers_in_flight(const std::vector<Instruction>& stream) {
  std::map<int, double> started;  // request -> bytes
  double held = 0, peak = 0;
  for (const auto& instruction : stream) {
    std::visit(
        [&](const auto& i) {
          using T = std::decay_t<decltype(i)>;
          if constexpr (std::is_same_v<T, Collective>)
            if (i.purpose == Purpose::dp_gradients) return;
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

// Sends' and receives' peers of one rank's stream.
std::set<int> pipeline_peers(const std::vector<Instruction>& stream) {
  std::set<int> peers;
  for (const auto& instruction : stream) {
    if (const auto* s = std::get_if<Send>(&instruction)) peers.insert(s->peer);
    if (const auto* r = std::get_if<Recv>(&instruction)) peers.insert(r->peer);
  }
  return peers;
}

// The model state of one rank, split where the schedule says how.
void add_model_state(const Schedule& schedule, int r, RankMemory& m) {
  if (r < int(schedule.model_state.size())) {
    const ModelStateBytes& s = schedule.model_state[r];
    m.weights_bytes = s.weights, m.gradient_bytes = s.gradients, m.optimizer_bytes = s.optimizer;
    m.static_bytes = s.total();
  } else {
    m.static_bytes = r < int(schedule.static_bytes.size()) ? schedule.static_bytes[r] : 0;
    m.weights_bytes = m.static_bytes;
  }
}

}  // namespace

double communicator_buffer_bytes(const Schedule& schedule, int rank,
                                 const CommunicatorProfile& communicator) {
  double peers = double(pipeline_peers(schedule.ranks[rank]).size());
  for (const auto& group : schedule.groups)
    if (group.size() > 1 && std::find(group.begin(), group.end(), rank) != group.end())
      peers += std::min<double>(double(group.size()) - 1, 2);  // a ring's two neighbours
  return peers * communicator.device_buffer_channels * 2 * communicator.device_buffer_bytes;
}

double least_free_fraction(const MemoryEstimate& estimate) {
  double least = 1;
  for (const RankMemory& m : estimate.ranks)
    if (m.capacity_bytes > 0)
      least = std::min(least, (m.capacity_bytes - m.peak_bytes()) / m.capacity_bytes);
  return least;
}

MemoryEstimate estimate_memory(const Schedule& schedule, const Slice& slice,
                               const FrameworkMemory* profile) {
  const auto devices = slice_devices(slice, schedule);
  if (!profile && slice.catalog) profile = &slice.catalog->framework_memory_profile();
  const FrameworkMemory none;
  const FrameworkMemory& framework = profile ? *profile : none;
  MemoryEstimate estimate;
  double worst_headroom = 0;
  for (int r = 0; r < schedule.world; ++r) {
    const auto& d = devices[r];
    RankMemory m;
    m.rank = r;
    m.gpu = d.gpu;
    m.gpu_type = d.type->name;
    m.site = d.site;
    add_model_state(schedule, r, m);
    if (framework.data_parallel_gradient_copy && schedule.plan.dp > 1 && schedule.plan.zero == 0) {
      m.gradient_bytes *= 2;  // the buckets' copy
      m.static_bytes += m.gradient_bytes / 2;
    }
    if (framework.master_gradients && element_bytes(schedule.plan.precision) == 2) {
      // fp32 gradients beside the half ones, sharded as the optimizer state (4 of its 12 bytes)
      m.gradient_bytes += m.optimizer_bytes / 3;
      m.static_bytes += m.optimizer_bytes / 3;
    }
    m.activation_bytes = peak_activation_bytes(schedule.ranks[r], framework.loss_gradient_copies);
    m.buffer_bytes = buffers_in_flight(schedule.ranks[r]);
    m.workspace_bytes = framework.cublas_workspace_bytes;
    m.slack_bytes = framework.allocator_slack * m.allocated_bytes();
    m.context_bytes = framework.context_for(m.gpu_type);
    m.comm_buffer_bytes = communicator_buffer_bytes(schedule, r, slice.communicator);
    m.framework_bytes = m.workspace_bytes + m.slack_bytes + m.context_bytes + m.comm_buffer_bytes;
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
