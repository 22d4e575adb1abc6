// The ordering rules of the NCCL communicator, kept free of CUDA so that the CPU tests check
// them (tests/exec/test_nccl_ordering.cpp): on which queue (CUDA stream and NCCL communicator)
// each call goes, and at which point a request's host copies happen.
//
// Queues: collectives on one queue; each point-to-point edge (sender -> receiver) on a queue of
// its own. Within a queue NCCL runs calls in the order they were queued, and a transfer completes
// only when its peer's matching call heads the peer's queue: with a queue per direction only, a
// stage's pre-posted receive from its predecessor holds its sends to its successor, which in a
// deep 1F1B pipeline waits in a cycle; with a queue per edge, only the schedule's own order on
// that edge remains. The edges are coloured so that no rank has two of one colour: each colour is
// one NCCL communicator split (two ranks per edge) on one stream. The test replays every rank's
// schedule over these queues and finds no deadlock.
//
// Host copies of a started request: a host input is staged to the device on a copy stream that
// carries nothing else (a pageable copy may wait for its stream, and there it waits for no
// transfer); a host output is copied back only in wait(), after the request's completion event
// (a copy into pageable host memory returns only when done: queued behind a receive, it would
// block the start until the peer sends). So no start blocks the host.
#pragma once
#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace fabtrain::cuda {

// Queue 0: the collectives; queue 1 + c: the transfers of colour c.
constexpr int collective_queue = 0;

// The colours of the point-to-point edges of a job, from every rank's peers (each edge is used
// both ways: activations one way, gradients the other). Every rank computes the same colouring
// from the same lists: greedy, edges in order, the least colour neither end has yet.
class TransferColours {
 public:
  TransferColours() = default;
  explicit TransferColours(const std::vector<std::vector<int>>& peers_of_rank) {
    for (int r = 0; r < int(peers_of_rank.size()); ++r)
      for (int p : peers_of_rank[r])
        if (p != r) {
          colour_[{r, p}] = -1;
          colour_[{p, r}] = -1;
        }
    std::map<int, std::set<int>> used;  // rank -> colours of its edges
    for (auto& [edge, colour] : colour_) {
      colour = 0;
      while (used[edge.first].count(colour) || used[edge.second].count(colour)) ++colour;
      used[edge.first].insert(colour);
      used[edge.second].insert(colour);
      colours_ = std::max(colours_, colour + 1);
    }
  }
  int colours() const { return colours_; }
  // -1 when sender -> receiver is not an edge.
  int colour(int sender, int receiver) const {
    auto it = colour_.find({sender, receiver});
    return it == colour_.end() ? -1 : it->second;
  }
  // The edge of colour c at rank (sender, receiver), or {-1, -1}.
  std::pair<int, int> edge_of(int rank, int c) const {
    for (const auto& [edge, colour] : colour_)
      if (colour == c && (edge.first == rank || edge.second == rank)) return edge;
    return {-1, -1};
  }
  // The queue of a transfer between rank and peer; -1 when they are not an edge.
  int queue(int rank, int peer, bool sending) const {
    const int c = sending ? colour(rank, peer) : colour(peer, rank);
    return c < 0 ? -1 : 1 + c;
  }

 private:
  std::map<std::pair<int, int>, int> colour_;
  int colours_ = 0;
};

// The host-side steps of a request, in order.
enum class HostStep {
  stage_in,       // host input -> device staging buffer, on the copy stream
  after_stage,    // the request's stream waits for the staging copy
  after_compute,  // the request's stream waits for the kernels queued on the compute stream
  enqueue,        // the NCCL call
  record_done,    // the completion event, on the request's stream
  sync_done,      // the host waits for the completion event
  copy_out,       // device staging buffer -> host output
  release,        // staging buffers back to the pool, event back to its pool
};

// Whether a step can hold the host until a peer acts.
inline bool may_block_host(HostStep step) {
  return step == HostStep::sync_done || step == HostStep::copy_out;
}

struct RequestSteps {
  std::vector<HostStep> at_start, at_wait;
};

inline RequestSteps request_steps(bool host_in, bool host_out) {
  RequestSteps s;
  if (host_in) s.at_start = {HostStep::stage_in, HostStep::after_stage};
  s.at_start.insert(s.at_start.end(),
                    {HostStep::after_compute, HostStep::enqueue, HostStep::record_done});
  s.at_wait = {HostStep::sync_done};
  if (host_out) s.at_wait.push_back(HostStep::copy_out);
  s.at_wait.push_back(HostStep::release);
  return s;
}

}  // namespace fabtrain::cuda
