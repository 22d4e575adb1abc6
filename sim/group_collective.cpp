// Planning and playing one group collective call as concurrent flows (see group_collective.hpp).
#include "sim/group_collective.hpp"

#include <algorithm>
#include <map>
#include <simgrid/s4u.hpp>

#include "sim/sim_process.hpp"
#include "sim/slice_platform.hpp"

namespace fabtrain {

namespace sg4 = simgrid::s4u;

namespace {

int ring_steps(CollectiveOp op, int n) {
  return op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
}

uint64_t flow_bytes(double bytes) { return bytes > 0 ? uint64_t(bytes + 0.5) : 0; }

// One mailbox per ordered pair of hosts for window-limited collective flows. Each rank is in one
// call at a time and both ends of a flow are members of that call, so a pair's mailbox carries
// one call's flow at a time.
sg4::Mailbox* flow_mailbox(sg4::Host* from, sg4::Host* to) {
  return SimProcess::get().mailbox(from, to, "collective");
}

// Every member waits here until the last one arrives.
void meet(GroupCollective& call, int& count, sg4::SemaphorePtr& semaphore) {
  if (!semaphore) semaphore = sg4::Semaphore::create(0);
  if (++count < call.size) {
    semaphore->acquire();
    return;
  }
  for (int i = 1; i < call.size; ++i) semaphore->release();
}

// One phase of the members' way: start the member's receives and sends of that phase, wait for
// them; returns the latest finish + tail of its sends (0: none).
double play_own_phase(GroupCollective& call, int member, int phase) {
  static char token;
  const auto& mine = call.flows_of[member];
  std::vector<sg4::CommPtr> comms;
  comms.reserve(mine.size());
  std::vector<void*> slots(mine.size(), nullptr);
  for (size_t j = 0; j < mine.size(); ++j) {  // receives first, so sends find them posted
    const auto& f = call.flows[mine[j]];
    if (f.phase == phase && f.receiver == member && f.mailbox) {
      auto comm = f.mailbox->get_init()->set_dst_data(&slots[j], sizeof(void*));
      comm->set_rate(f.rate_cap);
      comm->start();
      comms.push_back(std::move(comm));
    }
  }
  std::vector<std::pair<sg4::CommPtr, double>> own;
  for (int i : mine) {
    const auto& f = call.flows[i];
    if (f.phase != phase || f.sender != member) continue;
    sg4::CommPtr comm;
    if (f.mailbox) {
      comm = f.mailbox->put_init(&token, flow_bytes(f.bytes));
      comm->set_rate(f.rate_cap);
    } else {
      comm = sg4::Comm::sendto_init(f.from, f.to);
      comm->set_payload_size(flow_bytes(f.bytes));
    }
    comm->start();
    own.emplace_back(comm, f.tail_s);
    comms.push_back(std::move(comm));
  }
  sg4::Comm::wait_all(comms);
  double release = 0;
  for (const auto& [comm, tail] : own) release = std::max(release, comm->get_finish_time() + tail);
  return release;
}

// The members' way (window-limited flows): start own sends and receives, wait, meet at the
// latest release; phase by phase, meeting before each.
void play_by_members(GroupCollective& call, int member, const std::function<void()>& bytes_moved) {
  meet(call, call.arrived, call.started);
  double release = 0;
  for (int phase = 0; phase < call.phases; ++phase) {
    if (phase > 0) {
      if (release > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(release);
      meet(call, call.phase_arrived[phase - 1], call.phase_started[phase - 1]);
    }
    release = std::max(release, play_own_phase(call, member, phase));
    if (phase == call.moved_phase && bytes_moved) bytes_moved();
  }
  call.release_s = std::max(call.release_s, release);
  if (!call.done) call.done = sg4::Semaphore::create(0);
  if (++call.finished < call.size) {
    call.done->acquire();
    return;
  }
  if (call.release_s > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(call.release_s);
  for (int i = 1; i < call.size; ++i) call.done->release();
}

// libnbc's started reduce-scatter (the "via root" shape of group_collective.hpp).
void plan_via_root(GroupCollective& call, const std::vector<int>& gpus, SlicePlatform& platform,
                   const CollectiveCalibration* correction) {
  const int n = call.size;
  // A two-rank call moves the buffer one way, then half of it back: 1.5 buffers in two phases.
  const double scale = correction ? correction->bandwidth_factor / 1.5 : 1;
  const double terms =
      correction ? (call.bytes <= correction->small_bytes ? correction->small_latency_terms
                                                          : correction->latency_terms) /
                       2
                 : 1;
  auto add = [&](int from, int to, double volume, int phase, double extra) {
    const int a = gpus[from], b = gpus[to];
    const double hop = platform.route_latency(a, b);
    call.flows.push_back({from, to, platform.host(a), platform.host(b), nullptr, volume,
                          platform.rate_cap(a, b, volume), std::max(0.0, (terms - 1) * hop) + extra,
                          phase});
  };
  int round = 0;
  for (int half = 1; half < n; half *= 2, ++round)
    for (int member = half; member < n; member += 2 * half)
      add(member, member - half, call.bytes * scale, round, 0);
  for (int member = 1; member < n; ++member)
    add(0, member, call.bytes / n * scale, round, correction ? correction->overhead_s : 0);
  call.phases = round + 1;
  call.moved_phase = round - 1;
}

int tree_depth(int n) {
  int depth = 0;
  for (int last = n - 1; last > 0; last = (last - 1) / 2) ++depth;
  return depth;
}

// The ring's slowest hop: its largest latency, smallest bandwidth, and whether any hop crosses VMs.
struct RingPath {
  double alpha = 0, bandwidth = 0;
  bool crosses_network = false;
};

RingPath ring_path(const std::vector<int>& gpus, SlicePlatform& platform) {
  RingPath path;
  const int n = int(gpus.size());
  for (int i = 0; i < n; ++i) {
    const int a = gpus[i], b = gpus[(i + 1) % n];
    path.alpha = std::max(path.alpha, platform.route_latency(a, b));
    const double bw = platform.route_bandwidth(a, b);
    path.bandwidth = i == 0 ? bw : std::min(path.bandwidth, bw);
  }
  for (int i = 0; i < n; ++i) path.crosses_network |= !platform.same_vm(gpus[i], gpus[(i + 1) % n]);
  return path;
}

// What the chosen protocol adds: a latency per call and per step, and the bandwidth it keeps.
struct ProtocolCost {
  double call_latency = 0, step_extra = 0, fraction = 1;
};

// Chooses ring or tree and, under a communicator that lists protocols, the (shape, protocol) pair
// of lowest estimate; sets call.tree and call.protocol.
ProtocolCost choose_shape(GroupCollective& call, const RingPath& path, bool tree_allowed,
                          const CollectiveCalibration* correction,
                          const std::vector<CollectiveProtocol>& protocols) {
  const int n = call.size, steps = ring_steps(call.op, n);
  const double alpha = path.alpha, bandwidth = path.bandwidth, bytes = call.bytes;
  // The protocol's extra latency per step: a network hop's where any hop of the ring crosses VMs.
  auto step_latency = [&](const CollectiveProtocol& p) {
    return path.crosses_network ? p.step_latency_net_s : p.step_latency_intra_s;
  };
  ProtocolCost cost;
  if (!correction && !protocols.empty() && bandwidth > 0) {
    double best = -1;
    for (int k = 0; k < int(protocols.size()); ++k) {
      const auto& p = protocols[k];
      const double rate = bandwidth * p.bandwidth_fraction;
      const double ring =
          p.call_latency_s + steps * (alpha + step_latency(p)) + steps * (bytes / n) / rate;
      for (const bool tree : {false, true}) {
        if (tree && !tree_allowed) continue;
        const int depth = tree_depth(n);
        const double t =
            tree ? p.call_latency_s + 2 * depth * (alpha + step_latency(p)) + 3 * bytes / rate
                 : ring;
        if (best < 0 || t < best) {
          best = t;
          call.tree = tree;
          call.protocol = k;
        }
      }
    }
    const auto& chosen = protocols[call.protocol];
    cost.call_latency = chosen.call_latency_s;
    cost.step_extra = step_latency(chosen);
    cost.fraction = chosen.bandwidth_fraction;
  } else if (tree_allowed && bandwidth > 0) {
    const int depth = tree_depth(n);
    const double ring = steps * alpha + steps * (bytes / n) / bandwidth;
    const double tree = 2 * depth * alpha + 3 * bytes / bandwidth;
    call.tree = tree < ring;
  }
  return cost;
}

// Each flow pays its own hop's latency; the tail tops it up to latency_terms * alpha and adds the
// per-call overhead. The correction is a two-rank call's; over n ranks it grows as the ring does.
void add_corrected_ring_flows(GroupCollective& call, const std::vector<int>& gpus,
                              SlicePlatform& platform, double alpha,
                              const CollectiveCalibration& correction) {
  const int n = call.size;
  const bool small = call.bytes <= correction.small_bytes;
  const double latency = (small ? correction.small_latency_terms : correction.latency_terms) *
                         alpha * correction_latency_scale(n);
  const double volume = call.bytes * correction.bandwidth_factor * correction_volume_scale(n);
  for (int i = 0; i < n; ++i) {
    const int a = gpus[i], b = gpus[(i + 1) % n];
    call.flows.push_back(
        {i, (i + 1) % n, platform.host(a), platform.host(b), nullptr, volume,
         platform.rate_cap(a, b, volume),
         std::max(0.0, latency - platform.route_latency(a, b)) + correction.overhead_s});
  }
}

void add_tree_flows(GroupCollective& call, const std::vector<int>& gpus, SlicePlatform& platform,
                    const ProtocolCost& cost) {
  const int n = call.size;
  double hop = 0;
  for (int child = 1; child < n; ++child) {
    const int parent = (child - 1) / 2;
    hop = std::max({hop, platform.route_latency(gpus[child], gpus[parent]),
                    platform.route_latency(gpus[parent], gpus[child])});
  }
  const double tail =
      (2 * tree_depth(n) - 1) * hop + cost.call_latency + 2 * tree_depth(n) * cost.step_extra;
  const double volume = call.bytes / cost.fraction;
  for (int child = 1; child < n; ++child) {
    const int parent = (child - 1) / 2;
    const int c = gpus[child], p = gpus[parent];
    call.flows.push_back({child, parent, platform.host(c), platform.host(p), nullptr, volume,
                          platform.rate_cap(c, p, volume), tail});
    call.flows.push_back({parent, child, platform.host(p), platform.host(c), nullptr, volume,
                          platform.rate_cap(p, c, volume), tail});
  }
}

void add_ring_flows(GroupCollective& call, const std::vector<int>& gpus, SlicePlatform& platform,
                    const ProtocolCost& cost) {
  const int n = call.size, steps = ring_steps(call.op, n);
  const double volume = steps * (call.bytes / n) / cost.fraction;
  for (int i = 0; i < n; ++i) {
    const int a = gpus[i], b = gpus[(i + 1) % n];
    call.flows.push_back(
        {i, (i + 1) % n, platform.host(a), platform.host(b), nullptr, volume,
         platform.rate_cap(a, b, volume),
         (steps - 1) * platform.route_latency(a, b) + cost.call_latency + steps * cost.step_extra});
  }
}

// Capped flows get mailboxes and each member the list of its flows; phases get their counters.
void finish_flows(GroupCollective& call) {
  for (auto& f : call.flows)
    if (f.rate_cap > 0) {
      call.capped = true;
      f.mailbox = flow_mailbox(f.from, f.to);
    }
  call.phase_arrived.assign(call.phases - 1, 0);
  call.phase_started.resize(call.phases - 1);
  if (call.capped) {
    call.flows_of.resize(call.size);
    for (int i = 0; i < int(call.flows.size()); ++i) {
      call.flows_of[call.flows[i].sender].push_back(i);
      call.flows_of[call.flows[i].receiver].push_back(i);
    }
  }
}

}  // namespace

GroupCollective plan_group_collective(CollectiveOp op, double bytes, const std::vector<int>& gpus,
                                      SlicePlatform& platform, bool allow_tree,
                                      const CollectiveCalibration* correction,
                                      const std::vector<CollectiveProtocol>& protocols,
                                      bool via_root) {
  GroupCollective call;
  call.op = op;
  call.bytes = bytes;
  call.size = int(gpus.size());
  const int n = call.size;
  if (n < 2) return call;
  const RingPath path = ring_path(gpus, platform);
  const bool tree_allowed = !correction && allow_tree && op == CollectiveOp::all_reduce && n > 2;
  const ProtocolCost cost = choose_shape(call, path, tree_allowed, correction, protocols);
  if (via_root && op == CollectiveOp::reduce_scatter) {
    call.tree = false;
    call.protocol = -1;
    plan_via_root(call, gpus, platform, correction);
  } else if (correction) {
    add_corrected_ring_flows(call, gpus, platform, path.alpha, *correction);
  } else if (call.tree) {
    add_tree_flows(call, gpus, platform, cost);
  } else {
    add_ring_flows(call, gpus, platform, cost);
  }
  finish_flows(call);
  return call;
}

void play_group_collective(GroupCollective& call, int member,
                           const std::function<void()>& bytes_moved) {
  if (call.size < 2) {
    if (bytes_moved) bytes_moved();
    return;
  }
  if (call.capped) {
    play_by_members(call, member, bytes_moved);
    return;
  }
  if (!call.done) call.done = sg4::Semaphore::create(0);
  if (!call.moved) call.moved = sg4::Semaphore::create(0);
  if (++call.arrived < call.size) {  // the last to arrive plays the flows
    call.moved->acquire();
    if (bytes_moved) bytes_moved();
    call.done->acquire();
    return;
  }
  double release = sg4::Engine::get_clock();
  for (int phase = 0; phase < call.phases; ++phase) {
    if (release > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(release);
    std::vector<sg4::CommPtr> comms;
    std::vector<double> tails;
    for (const auto& f : call.flows) {
      if (f.phase != phase) continue;
      auto comm = sg4::Comm::sendto_init(f.from, f.to);
      comm->set_payload_size(flow_bytes(f.bytes));
      comm->start();
      comms.push_back(std::move(comm));
      tails.push_back(f.tail_s);
    }
    sg4::Comm::wait_all(comms);
    if (phase == call.moved_phase) {
      for (int i = 1; i < call.size; ++i) call.moved->release();
      if (bytes_moved) bytes_moved();
    }
    for (size_t i = 0; i < comms.size(); ++i)
      release = std::max(release, comms[i]->get_finish_time() + tails[i]);
  }
  if (release > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(release);
  for (int i = 1; i < call.size; ++i) call.done->release();
}

}  // namespace fabtrain
