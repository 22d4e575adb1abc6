// One collective call of one group, played as a handful of concurrent flows instead of a ring of
// per-step transfers: O(n) flows per call, no barrier actors, no mailboxes. Not here: the
// step-by-step ring (CollectiveMode::ring, in simulator.cpp), or which calls exist (the Schedule).
//
// How a call is played: members arrive one by one; the last to arrive starts every flow at once,
// waits for all of them, then for the latency terms the flows did not already pay, and releases
// the members waiting for it (on a semaphore, not polling). A call with a window-limited flow is
// played by its members instead (each starts its own flows once all have arrived, then they meet
// again at the end): SimGrid 3.32 ignores Comm::set_rate on host-to-host transfers and honours it
// only on mailbox transfers, whose two ends must be actors on the two hosts. Two shapes:
//   ring  each member sends its whole ring volume (steps * bytes/n) to its ring successor; the
//         call ends at max over flows of (finish + (steps-1) * that flow's latency). Uncontended,
//         that is the alpha-beta ring: steps * alpha + steps * (bytes/n) / B.
//   tree  (all-reduce only) a binary tree over the group's ring order: every child sends the
//         buffer to its parent (reduce) while every parent sends it to its child (broadcast),
//         pipelined as NCCL does; the call ends at the last flow's finish + (2*depth-1) * the
//         largest hop latency. Chosen, as NCCL's tuner does, when its alpha-beta estimate
//         2*depth*alpha + 3*bytes/B (an inner node's NIC carries the buffer three times) beats
//         the ring's 2(n-1)*alpha + 2(n-1)/n*bytes/B, with alpha the slowest hop's latency and
//         B the slowest hop's bandwidth: large groups with small buffers (e.g. the gradient norm).
//   protocol  (where the communicator lists protocols, catalog.hpp CollectiveProtocol) ring and
//         tree are each estimated under every protocol, call latency + steps * (hop latency +
//         the protocol's step latency) + volume / (B * its bandwidth fraction), and the lowest
//         (algorithm, protocol) pair is played, as NCCL's tuner picks: a flow carries its volume
//         over the fraction (LL's half rate), its tail adds the call and step latencies. Small
//         buffers get LL's low latency, large ones Simple's full bandwidth.
//   corrected  (a calibration's collective correction, sim/cost/calibration.hpp) the ring shape
//   with
//         each member sending bytes * bandwidth_factor to its successor; every flow's tail makes
//         the call end at latency_terms * alpha + that flow's transfer, alpha the slowest hop's
//         latency: uncontended, latency_terms * alpha + bytes * bandwidth_factor / B.
//   via root  (a started reduce-scatter where the communicator says so: Open MPI's libnbc) in
//         phases, each starting when the previous one's flows (and tails) are done: binomial
//         rounds, in round r the member at an odd multiple of 2^(r-1) sends its partial sum of the
//         whole buffer to the member 2^(r-1) below it; then member 0 sends every member its part.
//         The group's next call may start once the reduce rounds are done: its reduce and this
//         scatter run on opposite directions. A correction (fitted on two-rank calls: the buffer
//         one way, then half of it back) scales every flow by bandwidth_factor / 1.5 and gives
//         each phase half its latency terms, so a two-rank call costs what the formula says.
#pragma once
#include <functional>
#include <simgrid/s4u/Semaphore.hpp>
#include <vector>

#include "plan/schedule.hpp"
#include "platforms/catalog.hpp"
#include "sim/cost/calibration.hpp"

namespace simgrid::s4u {
class Host;
class Mailbox;
}  // namespace simgrid::s4u

namespace fabtrain {

class SlicePlatform;

struct GroupFlow {
  int sender = 0, receiver = 0;  // positions in the group
  simgrid::s4u::Host* from = nullptr;
  simgrid::s4u::Host* to = nullptr;
  simgrid::s4u::Mailbox* mailbox = nullptr;  // for window-limited flows
  double bytes = 0;
  double rate_cap = 0;  // 0: none
  double tail_s = 0;    // latency still owed after this flow finishes
  int phase = 0;        // flows of phase p start when those of phase p-1 are done
};

struct GroupCollective {
  CollectiveOp op = CollectiveOp::all_reduce;
  double bytes = 0;
  int size = 0;
  bool tree = false;
  int protocol = -1;    // index into the communicator's protocols; -1: none modelled
  bool capped = false;  // some flow is window-limited: played by the members
  std::vector<GroupFlow> flows;
  std::vector<std::vector<int>> flows_of;  // per member: the flows it sends or receives
  int phases = 1;
  int moved_phase = 0;  // the group's next call may start when phases up to this one are done
  // While playing. Members wait on a semaphore, not suspended: suspending an actor in SimGrid
  // also pauses the sends it still has in flight.
  int arrived = 0;
  int finished = 0;
  double release_s = 0;
  simgrid::s4u::SemaphorePtr started, moved, done;  // moved: the flows have finished
  std::vector<int> phase_arrived;                   // per phase after the first
  std::vector<simgrid::s4u::SemaphorePtr> phase_started;
};

// Flows of one call of `op` over `gpus` (slice GPU indices in ring order). allow_tree: whether
// the tree may be chosen (automatic mode), else always the ring shape. correction: the
// calibration's cost for this op, or null for the ring/tree default. protocols: the
// communicator's (ignored under a correction, which was fitted without them). via_root: a
// reduce-scatter played as a reduce to member 0 and a scatter from it (the shape above).
GroupCollective plan_group_collective(CollectiveOp op, double bytes, const std::vector<int>& gpus,
                                      SlicePlatform& platform, bool allow_tree,
                                      const CollectiveCalibration* correction = nullptr,
                                      const std::vector<CollectiveProtocol>& protocols = {},
                                      bool via_root = false);

// Whether call c is played via the group's root under communicator comm (the shape above): a
// started reduce-scatter where the communicator says so.
inline bool played_via_root(const Collective& c, const CommunicatorProfile& comm) {
  return c.op == CollectiveOp::reduce_scatter && c.request >= 0 &&
         comm.started_reduce_scatter_via_root;
}

// Called by each member's actor (member: its position in the group) when it reaches the call;
// returns when the call is done. bytes_moved (if any) is called when the member's flows of the
// phases up to moved_phase have finished, before the latency terms still owed: the next call of
// its group may start then.
void play_group_collective(GroupCollective& call, int member,
                           const std::function<void()>& bytes_moved = {});

}  // namespace fabtrain
