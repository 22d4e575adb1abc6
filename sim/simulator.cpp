// Playing a schedule: per-rank actors, compute as timed sleeps, communication as SimGrid flows.
#include "sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <variant>

#include "common/error.hpp"
#include "plan/request_rules.hpp"
#include "sim/group_collective.hpp"
#include "sim/sim_process.hpp"
#include "sim/slice_devices.hpp"
#include "sim/slice_platform.hpp"

namespace fabtrain {

namespace sg4 = simgrid::s4u;

namespace {

const Calibration& no_calibration() {
  static const Calibration empty;
  return empty;
}

struct Message {
  double posted_s = 0;  // when the sender posted it (absolute simulated clock)
};

// What a rank needs to play one collective, resolved before the run: the shared call (fast and
// automatic modes) or its ring neighbours (ring mode).
struct CollectivePlay {
  GroupCollective* call = nullptr;
  int member = 0;                  // position in the group
  sg4::Mailbox* inbox = nullptr;   // from the previous rank of the ring, for this group
  sg4::Mailbox* outbox = nullptr;  // to the next rank
  double rate_cap = 0;             // to the next rank
  double inbound_cap = 0;          // from the previous rank
  double latency = 0;              // one-way, to the next rank
  int steps = 0;                   // 0: group of one, nothing to do
  double chunk_bytes = 0;
  bool latency_bound = false;  // its time is its rounds' latency, not its bytes (see resolve)
};

struct P2pPlay {
  sg4::Mailbox* mailbox = nullptr;
  double rate_cap = 0;
  double ready_after_s = 0;  // Recv: after the bytes arrive, the calibration's p2p extra
};

struct CollectiveLane;

struct RankPlay {
  int rank = 0;
  const std::vector<Instruction>* stream = nullptr;
  std::vector<double> seconds;             // compute time per instruction
  std::vector<P2pPlay> p2p;                // per instruction (Send/Recv)
  std::vector<CollectivePlay> collective;  // per instruction (Collective)
  std::vector<Message> sent;               // payloads, stable addresses
  std::vector<Message*> received;
  std::vector<sg4::CommPtr> posted_receives;
  // overlap: per request, the start's instruction; a started send's flow; a started collective's
  // completion; per group, the last call's completion (a rank's calls of a group run one at a
  // time, in stream order, as on one NCCL stream or MPI communicator), and its lane where calls
  // run one after another
  std::map<int, int> start_of;
  std::map<int, sg4::CommPtr> sends_started;
  std::map<int, sg4::SemaphorePtr> completed;   // per request, released when its call has ended
  std::map<int, sg4::SemaphorePtr> last_call;   // per group, its last call's completion
  std::map<int, sg4::SemaphorePtr> last_moved;  // per group, released when its bytes have moved
  std::map<int, std::unique_ptr<CollectiveLane>> lanes;  // per group
  bool concurrent_collectives = false;                   // the communicator's (CommunicatorProfile)
  std::vector<std::pair<double, double>> in_flight;  // spans any communication of it is in flight
  Breakdown breakdown;
  double finish_s = 0;
  bool done = false;
  bool trace = false;
  std::vector<TraceEvent> events;
};

uint64_t flow_bytes(double bytes) { return bytes > 0 ? uint64_t(bytes + 0.5) : 0; }

// The cap is set on both ends: whichever side posts first creates the transfer SimGrid keeps.
sg4::CommPtr post_receive(sg4::Mailbox* from, Message** into, double cap) {
  auto comm = from->get_init()->set_dst_data(reinterpret_cast<void**>(into), sizeof(void*));
  if (cap > 0) comm->set_rate(cap);
  comm->start();
  return comm;
}

void receive(sg4::Mailbox* from, double cap) {
  Message* ignored = nullptr;
  post_receive(from, &ignored, cap)->wait();
}

sg4::CommPtr start_flow(sg4::Mailbox* to, Message* payload, double bytes, double cap) {
  auto comm = to->put_init(payload, flow_bytes(bytes));
  if (cap > 0) comm->set_rate(cap);
  comm->start();
  return comm;
}

void play_collective(const CollectivePlay& c, const std::function<void()>& bytes_moved = {}) {
  if (c.call) {
    play_group_collective(*c.call, c.member, bytes_moved);
    return;
  }
  static Message token;  // collectives carry no payload the players read
  for (int step = 0; step < c.steps; ++step) {
    auto out = start_flow(c.outbox, &token, c.chunk_bytes, c.rate_cap);
    receive(c.inbox, c.inbound_cap);
    out->wait();
  }
  if (bytes_moved) bytes_moved();
}

// Consecutive compute from instruction k (free loads in between) as one sleep: fewer simulation
// events (the trace still shows each). Returns the last instruction it played.
int play_compute(RankPlay& r, int k, double t0) {
  const auto& stream = *r.stream;
  if (!(r.seconds[k] > 0)) return k;
  const double start = sg4::Engine::get_clock();
  double busy = 0;
  int last = k;
  std::vector<TraceEvent> loads;  // free loads inside the run, traced once compute follows
  for (int j = k; j < int(stream.size()); ++j) {
    if (r.seconds[j] > 0) {
      if (r.trace) {
        r.events.insert(r.events.end(), loads.begin(), loads.end());
        loads.clear();
        r.events.push_back(
            {r.rank, kComputeLane, j, start + busy - t0, start + busy + r.seconds[j] - t0});
      }
      busy += r.seconds[j];
      r.breakdown.compute_s += r.seconds[j];
      last = j;
    } else if (std::holds_alternative<LoadMicrobatch>(stream[j])) {
      loads.push_back({r.rank, kComputeLane, j, start + busy - t0, start + busy - t0});
    } else {
      break;
    }
  }
  sg4::this_actor::sleep_for(busy);
  return last;
}

// Waits for the receive posted at the start of the step; waiting for the peer to even send is
// pipeline idle, waiting for bytes in flight is exposed communication.
void play_recv(RankPlay& r, int k, double t0, int traced) {
  auto now = [] { return sg4::Engine::get_clock(); };
  const double start = now();
  r.posted_receives[k]->wait();
  r.in_flight.emplace_back(r.received[k]->posted_s, r.posted_receives[k]->get_finish_time());
  if (r.p2p[k].ready_after_s > 0) {
    const double ready = r.posted_receives[k]->get_finish_time() + r.p2p[k].ready_after_s;
    if (ready > now()) sg4::this_actor::sleep_until(ready);
  }
  const double end = now();
  const double posted = r.received[k]->posted_s;
  const double idle = std::max(0.0, std::min(posted, end) - start);
  r.breakdown.bubble_s += idle;
  r.breakdown.exposed_comm_s += (end - start) - idle;
  if (r.trace) {
    r.events.push_back({r.rank, kCommunicationLane, traced, start - t0, end - t0});
    if (traced != k)  // a started receive: its transfer, paired with its send in a trace
      r.events.push_back({r.rank, kSendsInFlightLane, k, r.received[k]->posted_s - t0,
                          r.posted_receives[k]->get_finish_time() - t0});
  }
}

// Waits until a call has ended; its completion stays released for later waits.
void await(const sg4::SemaphorePtr& completion) {
  completion->acquire();
  completion->release();
}

// Plays started collective k of rank r, from now to its end (in a helper actor or a lane);
// `moved`, where a later call waits for it, is released once its bytes have moved.
void play_started(RankPlay& r, int k, const sg4::SemaphorePtr& moved,
                  const sg4::SemaphorePtr& completion, double t0) {
  const double start = sg4::Engine::get_clock();
  play_collective(r.collective[k], [&moved] {
    if (moved) moved->release();
  });
  const double end = sg4::Engine::get_clock();
  r.in_flight.emplace_back(start, end);
  if (r.trace) r.events.push_back({r.rank, kSendsInFlightLane, k, start - t0, end - t0});
  completion->release();
}

// Where a group's calls run one after another, one actor per rank and group plays them in the
// order they were started, each from when it is started or the previous one ends, whichever is
// later: what an actor per call that first joins the previous one would do, without creating an
// actor (a stack) per call. A daemon: it ends with the rank actors.
struct CollectiveLane {
  struct Call {
    int k;
    sg4::SemaphorePtr completion;
  };
  std::deque<Call> calls;
  sg4::SemaphorePtr queued = sg4::Semaphore::create(0);

  void run(RankPlay& r, double t0) {
    for (;;) {
      queued->acquire();
      const Call call = calls.front();
      calls.pop_front();
      play_started(r, call.k, nullptr, call.completion, t0);
    }
  }
};

// A started collective: played while the rank goes on. Under a communicator that runs calls one
// after another (NCCL's stream) it waits for the whole previous call of its group: its group's
// lane plays it. Where the communicator progresses started collectives together
// (CommunicatorProfile::concurrent_collectives: Open MPI's libnbc) a helper actor plays it: a
// latency-bound one does not wait, the rounds interleave; a bandwidth-bound one still does, since
// one TCP connection per peer, whose window bounds the rate, carries the bytes of all of them; but
// only until the previous call's bytes have moved, not through the latency it still owes, since
// the interleaved rounds keep the connection busy (the run records show it: GPT-2 medium's dp=4
// buckets over 103 ms finished 0.45 s apart after the first).
void start_collective(RankPlay& r, int k, int group, int request, double t0, bool concurrent) {
  sg4::SemaphorePtr completion = sg4::Semaphore::create(0);
  r.completed[request] = completion;
  r.last_call[group] = completion;
  if (!concurrent) {
    auto& lane = r.lanes[group];
    if (!lane) {
      lane = std::make_unique<CollectiveLane>();
      sg4::Actor::create("rank" + std::to_string(r.rank) + "-group" + std::to_string(group),
                         sg4::this_actor::get_host(), [&r, l = lane.get(), t0] { l->run(r, t0); })
          ->daemonize();
    }
    lane->calls.push_back({k, completion});
    lane->queued->release();
    return;
  }
  const bool together = r.collective[k].latency_bound;
  sg4::SemaphorePtr moved = sg4::Semaphore::create(0);
  sg4::SemaphorePtr previous_moved =
      !together && r.last_moved.count(group) ? r.last_moved[group] : nullptr;
  r.last_moved[group] = moved;
  sg4::Actor::create("rank" + std::to_string(r.rank) + "-req" + std::to_string(request),
                     sg4::this_actor::get_host(), [&r, previous_moved, moved, completion, k, t0] {
                       if (previous_moved)
                         previous_moved->acquire();  // its one waiter: the next start replaces it
                       play_started(r, k, moved, completion, t0);
                     });
}

// Waits for request's start to complete: the time spent here is exposed communication.
void play_wait(RankPlay& r, int k, const Wait& w, double t0) {
  auto now = [] { return sg4::Engine::get_clock(); };
  const int started = r.start_of.at(w.request);
  if (w.what == Awaits::recv) {
    play_recv(r, started, t0, k);
    return;
  }
  const double start = now();
  if (w.what == Awaits::send) {
    const sg4::CommPtr comm = r.sends_started.at(w.request);
    comm->wait();
    r.in_flight.emplace_back(r.sent[started].posted_s, comm->get_finish_time());
    if (r.trace)
      r.events.push_back({r.rank, kSendsInFlightLane, started, r.sent[started].posted_s - t0,
                          comm->get_finish_time() - t0});
  } else {
    await(r.completed.at(w.request));
  }
  r.breakdown.exposed_comm_s += now() - start;
  if (r.trace) r.events.push_back({r.rank, kCommunicationLane, k, start - t0, now() - t0});
}

// Length of the union of spans.
double union_length(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, begin = 0, end = -1e300;
  for (const auto& [a, b] : spans) {
    if (a > end) {
      if (end > begin) total += end - begin;
      begin = a, end = b;
    } else {
      end = std::max(end, b);
    }
  }
  if (end > begin) total += end - begin;
  return total;
}

double now() { return sg4::Engine::get_clock(); }

// Plays one rank's stream: one std::visit per instruction onto the play() overloads, as the
// executor's interpreter does: a new instruction kind fails to compile here until it is given a
// way to be played.
class RankPlayer {
 public:
  RankPlayer(RankPlay& r, double t0) : r_(r), t0_(t0) {}

  void play_step() {
    const auto& stream = *r_.stream;
    post_receives();
    for (k_ = 0; k_ < int(stream.size()); ++k_)
      std::visit([this](const auto& in) { play(in); }, stream[k_]);
    drain_sends();
    r_.breakdown.communication_s = union_length(r_.in_flight);
    r_.finish_s = now() - t0_;
    r_.done = true;
  }

 private:
  // Receives are posted ahead (blocking ones at the start of the step, started ones where the
  // schedule posts them) so a transfer starts as soon as its sender posts it.
  void post_receives() {
    const auto& stream = *r_.stream;
    const int n = int(stream.size());
    r_.received.assign(n, nullptr);
    r_.posted_receives.assign(n, nullptr);
    for (int k = 0; k < n; ++k)
      if (const auto* v = std::get_if<Recv>(&stream[k]); v && v->request < 0)
        r_.posted_receives[k] =
            post_receive(r_.p2p[k].mailbox, &r_.received[k], r_.p2p[k].rate_cap);
  }

  void play(const Forward&) { k_ = play_compute(r_, k_, t0_); }
  void play(const Backward&) { k_ = play_compute(r_, k_, t0_); }
  void play(const OptimizerStep&) { k_ = play_compute(r_, k_, t0_); }

  // free (the data loader runs ahead of the GPU); traced as the executor's are
  void play(const LoadMicrobatch&) {
    if (r_.trace) r_.events.push_back({r_.rank, kComputeLane, k_, now() - t0_, now() - t0_});
  }

  void play(const Send& in) {
    Message* m = &r_.sent[k_];
    m->posted_s = now();
    auto comm = start_flow(r_.p2p[k_].mailbox, m, in.bytes, r_.p2p[k_].rate_cap);
    if (in.request >= 0) {
      r_.start_of[in.request] = k_;
      r_.sends_started[in.request] = comm;
    } else {
      sends_.emplace_back(k_, comm);
    }
  }

  void play(const Recv& in) {
    if (in.request < 0) {
      play_recv(r_, k_, t0_, k_);
      return;
    }
    r_.start_of[in.request] = k_;
    r_.posted_receives[k_] =
        post_receive(r_.p2p[k_].mailbox, &r_.received[k_], r_.p2p[k_].rate_cap);
  }

  void play(const Wait& in) { play_wait(r_, k_, in, t0_); }

  void play(const Collective& in) {
    if (in.request >= 0) {
      r_.start_of[in.request] = k_;
      start_collective(r_, k_, in.group, in.request, t0_, r_.concurrent_collectives);
      return;
    }
    const double start = now();
    if (r_.last_call.count(in.group)) await(r_.last_call[in.group]);
    const double begin = now();
    play_collective(r_.collective[k_]);
    r_.in_flight.emplace_back(begin, now());
    r_.breakdown.exposed_comm_s += now() - start;
    if (r_.trace) r_.events.push_back({r_.rank, kCommunicationLane, k_, start - t0_, now() - t0_});
  }

  // The blocking sends' flows, still in flight at the end of the stream.
  void drain_sends() {
    const double drain = now();
    for (auto& [k, comm] : sends_) {
      comm->wait();
      r_.in_flight.emplace_back(r_.sent[k].posted_s, comm->get_finish_time());
      if (r_.trace)
        r_.events.push_back({r_.rank, kSendsInFlightLane, k, r_.sent[k].posted_s - t0_,
                             comm->get_finish_time() - t0_});
    }
    r_.breakdown.exposed_comm_s += now() - drain;
  }

  RankPlay& r_;
  double t0_;
  int k_ = 0;  // the instruction being played
  std::vector<std::pair<int, sg4::CommPtr>> sends_;
};

bool use_ring(const SimOptions& o) { return o.collectives == CollectiveMode::ring; }

// Resolves everything the actors need before the run, so that errors are thrown here, not
// inside it: per rank its compute times, mailboxes, rate caps and collective calls.
class PlayResolver {
 public:
  PlayResolver(const Slice& slice, const Schedule& schedule, const std::vector<RankDevice>& devices,
               SlicePlatform& platform, const Calibration& calibration, const SimOptions& options)
      : slice_(slice),
        schedule_(schedule),
        devices_(devices),
        platform_(platform),
        calibration_(calibration),
        options_(options),
        world_(schedule.world),
        calls_(schedule.groups.size()),
        group_gpus_(schedule.groups.size()) {
    for (size_t g = 0; g < schedule.groups.size(); ++g)
      for (int member : schedule.groups[g])
        if (member >= 0 && member < world_) group_gpus_[g].push_back(devices[member].gpu);
  }

  std::vector<RankPlay> resolve() {
    std::vector<RankPlay> plays(world_);
    for (int r = 0; r < world_; ++r) resolve_rank(r, plays[r]);
    return plays;
  }
  // calls()[g][i]: the i-th collective call of group g, shared by its members.
  const std::vector<std::deque<GroupCollective>>& calls() const { return calls_; }

 private:
  void resolve_rank(int r, RankPlay& p) {
    // A wait's start is then in the stream, of its kind (plan/request_rules.hpp).
    check_requests(schedule_.ranks[r], r);
    p.rank = r;
    p.trace = options_.trace;
    p.concurrent_collectives = slice_.communicator.concurrent_collectives;
    p.stream = &schedule_.ranks[r];
    const int n = int(p.stream->size());
    p.seconds.assign(n, 0);
    p.p2p.assign(n, {});
    p.collective.assign(n, {});
    p.sent.assign(n, {});
    std::vector<int> calls_seen(schedule_.groups.size(), 0);
    for (int k = 0; k < n; ++k) {
      const auto& instruction = (*p.stream)[k];
      p.seconds[k] = compute_seconds(instruction, *devices_[r].type, schedule_.plan.precision,
                                     slice_.catalog->compute, calibration_);
      if (const auto* s = std::get_if<Send>(&instruction)) {
        resolve_send(r, k, *s, p.p2p[k]);
      } else if (const auto* v = std::get_if<Recv>(&instruction)) {
        resolve_recv(r, k, *v, p.p2p[k]);
      } else if (const auto* c = std::get_if<Collective>(&instruction)) {
        resolve_collective(r, k, *c, calls_seen, p.collective[k]);
      }
    }
  }

  int peer_gpu(int r, int k, int peer) const {
    if (peer < 0 || peer >= world_ || peer == r)
      fail("rank {} instruction {} ({}): peer {} is not another rank of {}", r, k,
           to_string(schedule_.ranks[r][k]), peer, world_);
    return devices_[peer].gpu;
  }

  sg4::Mailbox* p2p_mailbox(int from, int to, Tensor what) {
    return SimProcess::get().mailbox(platform_.host(from), platform_.host(to),
                                     what == Tensor::activation ? "act" : "grad");
  }

  void resolve_send(int r, int k, const Send& s, P2pPlay& play) {
    const int gpu = devices_[r].gpu, to = peer_gpu(r, k, s.peer);
    play.mailbox = p2p_mailbox(gpu, to, s.what);
    play.rate_cap = platform_.rate_cap(gpu, to, s.bytes);
  }

  void resolve_recv(int r, int k, const Recv& v, P2pPlay& play) {
    const int gpu = devices_[r].gpu, from = peer_gpu(r, k, v.peer);
    play.mailbox = p2p_mailbox(from, gpu, v.what);
    play.rate_cap = platform_.rate_cap(from, gpu, v.bytes);
    if (calibration_.p2p)
      play.ready_after_s =
          (calibration_.p2p->latency_terms - 1) * platform_.route_latency(from, gpu) +
          calibration_.p2p->overhead_s;
    // Over the library's eager limit the message first waits for its receiver (rendezvous).
    const CommunicatorProfile& comm = slice_.communicator;
    if (comm.eager_limit_bytes > 0 && v.bytes > comm.eager_limit_bytes && from != gpu)
      play.ready_after_s += comm.rendezvous_round_trips * 2 * platform_.route_latency(from, gpu);
  }

  void resolve_collective(int r, int k, const Collective& c, std::vector<int>& calls_seen,
                          CollectivePlay& play) {
    if (c.group < 0 || c.group >= int(schedule_.groups.size()))
      fail("rank {} instruction {} ({}): group {} does not exist ({} groups)", r, k,
           to_string(schedule_.ranks[r][k]), c.group, schedule_.groups.size());
    const auto& members = schedule_.groups[c.group];
    const auto at = std::find(members.begin(), members.end(), r);
    if (at == members.end())
      fail("rank {} instruction {} ({}): rank is not a member of group {}", r, k,
           to_string(schedule_.ranks[r][k]), c.group);
    if (members.size() == 1) return;
    const auto corrected = calibration_.collectives.find(c.op);
    const CollectiveCalibration* correction =
        corrected == calibration_.collectives.end() ? nullptr : &corrected->second;
    const int member = int(at - members.begin());
    // A corrected op is never played step by step, nor a reduce-scatter via the group's root.
    if (!use_ring(options_) || correction || played_via_root(c, slice_.communicator))
      resolve_group_call(r, k, c, correction, calls_seen[c.group]++, member, play);
    else
      resolve_ring_steps(r, k, c, member, play);
    // Latency-bound: one ring step's chunk crosses the hop to the next member in less than the
    // hop's one-way latency.
    const int gpu = devices_[r].gpu;
    const int next_gpu = peer_gpu(r, k, members[(member + 1) % members.size()]);
    const double hop = platform_.route_latency(gpu, next_gpu);
    play.latency_bound =
        hop > 0 && platform_.transfer_seconds(gpu, next_gpu, c.bytes / members.size()) < hop;
  }

  // Fast and automatic modes: the call shared by the group's members (group_collective.hpp).
  void resolve_group_call(int r, int k, const Collective& c,
                          const CollectiveCalibration* correction, int index, int member,
                          CollectivePlay& play) {
    const int size = int(schedule_.groups[c.group].size());
    if (int(group_gpus_[c.group].size()) != size)
      fail("group {} names a rank outside the {} ranks", c.group, world_);
    auto& group_calls = calls_[c.group];
    if (index == int(group_calls.size()))
      group_calls.push_back(plan_group_collective(c.op, c.bytes, group_gpus_[c.group], platform_,
                                                  options_.collectives == CollectiveMode::automatic,
                                                  correction, slice_.communicator.protocols,
                                                  played_via_root(c, slice_.communicator)));
    GroupCollective& call = group_calls[index];
    if (call.op != c.op || call.bytes != c.bytes)
      fail(
          "rank {} instruction {} ({}): collective #{} of group {} is {} of {} bytes on another "
          "member; every member must make the same calls in the same order",
          r, k, to_string(schedule_.ranks[r][k]), index, c.group, to_string(call.op), call.bytes);
    play.call = &call;
    play.member = member;
  }

  // Ring mode: step by step to the ring neighbours.
  void resolve_ring_steps(int r, int k, const Collective& c, int member, CollectivePlay& play) {
    const auto& members = schedule_.groups[c.group];
    const int size = int(members.size()), gpu = devices_[r].gpu;
    const int next = members[(member + 1) % size];
    const int prev = members[(member + size - 1) % size];
    play.steps = c.op == CollectiveOp::all_reduce ? 2 * (size - 1) : size - 1;
    play.chunk_bytes = c.bytes / size;
    // The steps stream one after another over the same connection: the window limits their
    // total, as for the single flow of the group mode.
    const double streamed = play.steps * play.chunk_bytes;
    play.inbound_cap = platform_.rate_cap(peer_gpu(r, k, prev), gpu, streamed);
    const int next_gpu = peer_gpu(r, k, next);
    const std::string group = "/c" + std::to_string(c.group);
    play.inbox = sg4::Mailbox::by_name(platform_.host(gpu)->get_name() + group);
    play.outbox = sg4::Mailbox::by_name(platform_.host(next_gpu)->get_name() + group);
    play.rate_cap = platform_.rate_cap(gpu, next_gpu, streamed);
    play.latency = platform_.route_latency(gpu, next_gpu);
  }

  const Slice& slice_;
  const Schedule& schedule_;
  const std::vector<RankDevice>& devices_;
  SlicePlatform& platform_;
  const Calibration& calibration_;
  const SimOptions& options_;
  const int world_;
  std::vector<std::deque<GroupCollective>> calls_;
  std::vector<std::vector<int>> group_gpus_;
};

// Killed by SimGrid's deadlock detection: leave no stale message behind for the next run.
void clear_mailboxes(const std::vector<RankPlay>& plays,
                     const std::vector<std::deque<GroupCollective>>& calls) {
  for (const auto& q : plays)
    for (const auto& pp : q.p2p)
      if (pp.mailbox) pp.mailbox->clear();
  for (const auto& q : plays)
    for (const auto& c : q.collective)
      if (c.inbox) c.inbox->clear();
  for (const auto& group_calls : calls)
    for (const auto& call : group_calls)
      for (const auto& f : call.flows)
        if (f.mailbox) f.mailbox->clear();
}

// One actor per rank, all run to the end of the step; a rank that never finished deadlocked.
void play_all(std::vector<RankPlay>& plays, const std::vector<std::deque<GroupCollective>>& calls,
              SlicePlatform& platform, const std::vector<RankDevice>& devices) {
  auto& process = SimProcess::get();
  process.mark_started();
  const double t0 = process.engine().get_clock();
  for (int r = 0; r < int(plays.size()); ++r)
    sg4::Actor::create("rank" + std::to_string(r), platform.host(devices[r].gpu),
                       [&p = plays[r], t0] { RankPlayer(p, t0).play_step(); });
  process.engine().run();
  for (const auto& p : plays)
    if (!p.done) {
      clear_mailboxes(plays, calls);
      fail("schedule deadlocked in simulation: rank {} never finished its {} instructions", p.rank,
           p.stream->size());
    }
}

// SimGrid's clock keeps running from one run to the next, and a time taken as the difference of
// two absolute clock readings carries rounding noise of the run's start: reported times are
// rounded to the picosecond so that the same inputs give the same numbers in any run.
void round_to_picoseconds(std::vector<RankPlay>& plays) {
  auto picoseconds = [](double s) { return std::round(s * 1e12) / 1e12; };
  for (auto& p : plays) {
    p.finish_s = picoseconds(p.finish_s);
    p.breakdown.compute_s = picoseconds(p.breakdown.compute_s);
    p.breakdown.bubble_s = picoseconds(p.breakdown.bubble_s);
    p.breakdown.exposed_comm_s = picoseconds(p.breakdown.exposed_comm_s);
    p.breakdown.communication_s = picoseconds(p.breakdown.communication_s);
    for (auto& e : p.events) {
      e.start_s = picoseconds(e.start_s);
      e.end_s = picoseconds(e.end_s);
    }
  }
}

// Per rank its finish, breakdown and memory; the step is the last rank's finish.
void summarize_ranks(const std::vector<RankPlay>& plays, const std::vector<RankDevice>& devices,
                     SimResult& result) {
  for (int r = 0; r < int(plays.size()); ++r) {
    const auto& p = plays[r];
    RankResult rr;
    rr.rank = r;
    rr.gpu = devices[r].type->name;
    rr.site = devices[r].site;
    rr.finish_s = p.finish_s;
    rr.breakdown = p.breakdown;
    rr.peak_memory_bytes = result.memory.ranks[r].peak_bytes();
    rr.memory_capacity_bytes = result.memory.ranks[r].capacity_bytes;
    result.ranks.push_back(rr);
    if (p.finish_s > result.step_time_s) {
      result.step_time_s = p.finish_s;
      result.critical_rank = r;
    }
  }
  result.breakdown = plays[result.critical_rank].breakdown;
}

// Throughput, the study's TFLOP/s per GPU and MFU from the step time.
void summarize_rates(const ModelSpec& model, const Schedule& schedule,
                     const std::vector<RankDevice>& devices, SimResult& result) {
  if (!(result.step_time_s > 0)) return;
  double peak_sum = 0;
  for (int r = 0; r < schedule.world; ++r)
    peak_sum += peak_flops(*devices[r].type, schedule.plan.precision);
  result.tokens_per_s = double(schedule.global_batch) * schedule.seq / result.step_time_s;
  result.tflops_per_gpu =
      alpa_tflops_per_gpu(model, schedule.global_batch, schedule.seq, schedule.plan.recompute,
                          result.step_time_s, schedule.world);
  result.mfu = alpa_step_flops(model, schedule.global_batch, schedule.seq, false) /
               result.step_time_s / peak_sum;
}

}  // namespace

Simulator::Simulator(const Slice& slice) : slice_(slice) {
  if (!slice_.catalog) fail("slice '{}' has no catalog", slice_.name);
  SimProcess::get().platform(slice_);  // build the platform now, so the first run is not slower
}

SimResult Simulator::run(const ModelSpec& model, const Schedule& schedule,
                         const SimOptions& options) {
  const Calibration& calibration = options.calibration ? *options.calibration : no_calibration();
  const auto devices = slice_devices(slice_, schedule);
  auto& platform = SimProcess::get().platform(slice_);
  platform.configure(slice_, calibration);
  PlayResolver resolver(slice_, schedule, devices, platform, calibration, options);
  std::vector<RankPlay> plays = resolver.resolve();
  play_all(plays, resolver.calls(), platform, devices);
  round_to_picoseconds(plays);

  SimResult result;
  result.memory = estimate_memory(schedule, slice_);
  result.oom = result.memory.oom;
  summarize_ranks(plays, devices, result);
  summarize_rates(model, schedule, devices, result);
  if (options.trace)
    for (auto& p : plays) result.trace.insert(result.trace.end(), p.events.begin(), p.events.end());
  return result;
}

}  // namespace fabtrain
