// The NCCL communicator's ordering rules, checked without a GPU (exec/comm/nccl/nccl_ordering.hpp):
// every rank's compiled schedule is replayed over the communicator's queues as NCCL runs them
// (calls in queue order; a transfer completes when its peer's matching call heads the peer's
// queue; a collective when it heads the queue of every member) with the host blocking where the
// communicator blocks it (a wait; a blocking receive or collective; a start only if one of
// request_steps' start steps may block). No plan may deadlock. The same replay with a start that
// copies its result back at once (what a copy into pageable memory does) deadlocks a pipeline,
// so the replay can tell. Also: the staging pool stops allocating after the first step.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "exec/comm/nccl/nccl_ordering.hpp"
#include "exec/cuda/buffer_pool.hpp"
#include "exec/run/transfer_peers.hpp"
#include "plan/schedule.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using namespace fabtrain::cuda;

namespace {

struct QueuedCall {
  enum Kind { send, recv, collective } kind = send;
  int peer = -1, group = -1;
  Tensor what = Tensor::activation;
  int mb = 0;
  long id = 0;
};

using QueueRule = std::function<int(int rank, int peer, bool sending)>;

struct RankState {
  std::size_t pc = 0;
  std::map<int, std::deque<QueuedCall>> queues;
  std::map<int, long> requests;  // schedule request -> call id
  long blocked_on = -1;          // a call the host waits for
};

// Whether a start with (host input, host output) can hold the host, by the steps' own rule.
using StartBlocks = std::function<bool(bool host_in, bool host_out)>;

bool product_start_blocks(bool host_in, bool host_out) {
  const RequestSteps steps = request_steps(host_in, host_out);
  return std::any_of(steps.at_start.begin(), steps.at_start.end(), may_block_host);
}

class QueueReplay {
 public:
  QueueReplay(const Schedule& schedule, QueueRule rule, StartBlocks start_blocks)
      : schedule_(schedule),
        rule_(std::move(rule)),
        start_blocks_(std::move(start_blocks)),
        ranks_(schedule.ranks.size()) {}

  // "" when every rank finishes its step, else where each rank is stuck.
  std::string run() {
    for (bool moved = true; moved;) {
      moved = false;
      for (int r = 0; r < int(ranks_.size()); ++r) moved |= host_steps(r);
      while (device_step()) moved = true;
    }
    std::string stuck;
    for (int r = 0; r < int(ranks_.size()); ++r)
      if (ranks_[r].pc < schedule_.ranks[r].size())
        stuck += fmt::format("rank {} at '{}'; ", r, to_string(schedule_.ranks[r][ranks_[r].pc]));
    return stuck;
  }

 private:
  bool finished(long id) const { return done_.count(id) > 0; }

  // Plays rank r's host until it blocks; true when it moved.
  bool host_steps(int r) {
    RankState& s = ranks_[r];
    bool moved = false;
    while (s.pc < schedule_.ranks[r].size()) {
      if (s.blocked_on >= 0 && !finished(s.blocked_on)) return moved;
      s.blocked_on = -1;
      const Instruction& in = schedule_.ranks[r][s.pc];
      if (const auto* w = std::get_if<Wait>(&in)) {
        if (!finished(s.requests.at(w->request))) return moved;
      } else if (const auto* send = std::get_if<Send>(&in)) {
        // A blocking send is eager (queued, completed on the device); a start as any start.
        const long id = queue(r, {QueuedCall::send, send->peer, -1, send->what, send->mb},
                              rule_(r, send->peer, true));
        if (send->request >= 0) started(s, send->request, id, true, false);
      } else if (const auto* recv = std::get_if<Recv>(&in)) {
        const long id = queue(r, {QueuedCall::recv, recv->peer, -1, recv->what, recv->mb},
                              rule_(r, recv->peer, false));
        if (recv->request >= 0)
          started(s, recv->request, id, false, true);
        else
          s.blocked_on = id;
      } else if (const auto* c = std::get_if<Collective>(&in)) {
        const long id = queue(r, {QueuedCall::collective, -1, c->group}, collective_queue);
        if (c->request >= 0)
          started(s, c->request, id, true, true);
        else
          s.blocked_on = id;
      }
      ++s.pc;
      moved = true;
    }
    return moved;
  }
  void started(RankState& s, int request, long id, bool host_in, bool host_out) {
    s.requests[request] = id;
    if (start_blocks_(host_in, host_out)) s.blocked_on = id;
  }
  long queue(int r, QueuedCall call, int q) {
    call.id = next_id_++;
    ranks_[r].queues[q].push_back(call);
    return call.id;
  }
  const QueuedCall* head(int r, int q) const {
    auto it = ranks_[r].queues.find(q);
    return it == ranks_[r].queues.end() || it->second.empty() ? nullptr : &it->second.front();
  }
  void pop(int r, int q) {
    done_.insert(ranks_[r].queues[q].front().id);
    ranks_[r].queues[q].pop_front();
  }
  // Completes one call whose partners all head their queues; false when none can.
  bool device_step() {
    for (int r = 0; r < int(ranks_.size()); ++r)
      for (const auto& [q, calls] : ranks_[r].queues) {
        const QueuedCall* call = head(r, q);
        if (!call) continue;
        if (call->kind == QueuedCall::send) {
          const int theirs = rule_(call->peer, r, false);
          const QueuedCall* other = head(call->peer, theirs);
          if (theirs == q && other && other->kind == QueuedCall::recv && other->peer == r) {
            REQUIRE_MESSAGE(other->what == call->what, "a receive paired with another tensor");
            REQUIRE_MESSAGE(other->mb == call->mb, "a receive paired with another microbatch");
            pop(call->peer, q);
            pop(r, q);
            return true;
          }
        } else if (call->kind == QueuedCall::collective) {
          const std::vector<int>& members = schedule_.groups.at(call->group);
          const int group = call->group;
          if (std::all_of(members.begin(), members.end(), [&](int m) {
                const QueuedCall* h = head(m, collective_queue);
                return h && h->kind == QueuedCall::collective && h->group == group;
              })) {
            for (int m : members) pop(m, collective_queue);
            return true;
          }
        }
      }
    return false;
  }

  const Schedule& schedule_;
  QueueRule rule_;
  StartBlocks start_blocks_;
  std::vector<RankState> ranks_;
  std::set<long> done_;
  long next_id_ = 0;
};

Schedule schedule_of(const std::string& plan_text) {
  const ModelSpec model = load_model("gpt2");
  const Plan plan = parse_plan(plan_text);
  return compile(model, plan, plan.mb * plan.dp * 2, 64);
}

// The communicator's rule: a queue per edge, from every rank's peers.
QueueRule edge_queues(const Schedule& schedule) {
  std::vector<std::vector<int>> peers;
  for (const auto& stream : schedule.ranks) peers.push_back(transfer_peers(stream));
  return [colours = TransferColours(peers)](int rank, int peer, bool sending) {
    const int q = colours.queue(rank, peer, sending);
    REQUIRE_MESSAGE(q >= 0, "a transfer between ranks that are not peers");
    return q;
  };
}

// A queue per direction of travel (to a higher rank, to a lower one).
int direction_queues(int rank, int peer, bool sending) {
  return (sending ? peer > rank : peer < rank) ? 1 : 2;
}

const std::vector<std::string>& plans() {
  static const std::vector<std::string> list = {
      "pp=2,schedule=1f1b,mb=4",
      "pp=2,schedule=gpipe,mb=2",
      "pp=3,schedule=1f1b,mb=6",
      "pp=4,schedule=1f1b,mb=4",
      "pp=4,schedule=1f1b,mb=9",
      "pp=4,schedule=gpipe,mb=8",
      "pp=8,schedule=1f1b,mb=16",
      "dp=2,pp=2,mb=4",
      "tp=2,pp=2,mb=2",
      "dp=2,pp=2,zero=1,mb=4",
      "dp=2,zero=3,mb=2",
      "dp=2,tp=2,pp=2,mb=4",
      "pp=2,schedule=1f1b,mb=4,recompute=on",
  };
  return list;
}

}  // namespace

TEST_CASE("no plan deadlocks on the NCCL communicator's queues, overlap on or off") {
  for (const std::string& base : plans())
    for (const char* overlap : {",overlap=on", ",overlap=off"}) {
      const std::string text = base + overlap;
      CAPTURE(text);
      const Schedule schedule = schedule_of(text);
      CHECK(QueueReplay(schedule, edge_queues(schedule), product_start_blocks).run() == "");
    }
}

TEST_CASE("the replay finds the deadlocks of a blocking start and of shared transfer queues") {
  // A start that copies its host result back at once waits for its peer's data: the first
  // stage's pre-posted gradient receive then waits for a gradient not yet computed.
  const Schedule pp2 = schedule_of("pp=2,schedule=1f1b,mb=4,overlap=on");
  const auto copy_at_start = [](bool, bool host_out) { return host_out; };
  const std::string stuck = QueueReplay(pp2, edge_queues(pp2), copy_at_start).run();
  CHECK(stuck.find("rank 0") != std::string::npos);
  // Every transfer on one queue: a pre-posted receive holds the sends queued behind it.
  const auto one_queue = [](int, int, bool) { return 1; };
  CHECK(QueueReplay(pp2, one_queue, product_start_blocks).run() != "");
  // A queue per direction: fine for two stages, a cycle in a deep 1F1B pipeline.
  CHECK(QueueReplay(pp2, direction_queues, product_start_blocks).run() == "");
  const Schedule pp4 = schedule_of("pp=4,schedule=1f1b,mb=9,overlap=on");
  CHECK(QueueReplay(pp4, direction_queues, product_start_blocks).run() != "");
}

TEST_CASE("no start step blocks the host, and host results are copied back after completion") {
  for (bool host_in : {false, true})
    for (bool host_out : {false, true}) {
      const RequestSteps steps = request_steps(host_in, host_out);
      CHECK_FALSE(product_start_blocks(host_in, host_out));
      const auto at = [&](HostStep step) {
        return std::find(steps.at_wait.begin(), steps.at_wait.end(), step) - steps.at_wait.begin();
      };
      const bool copies_out =
          std::count(steps.at_wait.begin(), steps.at_wait.end(), HostStep::copy_out) > 0;
      CHECK(copies_out == host_out);
      if (host_out) CHECK(at(HostStep::sync_done) < at(HostStep::copy_out));
      CHECK(steps.at_wait.back() == HostStep::release);
      const bool stages =
          std::count(steps.at_start.begin(), steps.at_start.end(), HostStep::stage_in) > 0;
      CHECK(stages == host_in);
      CHECK(steps.at_start.back() == HostStep::record_done);
    }
}

TEST_CASE("transfer edges are coloured so that no rank has two edges of one colour") {
  // A pipeline of four stages, two replicas: ranks 0-1-2-3 and 4-5-6-7, plus a stray edge 0-7.
  const TransferColours colours({{1, 7}, {0, 2}, {1, 3}, {2}, {5}, {4, 6}, {5, 7}, {6, 0}});
  // Greedy needs at most 2d - 1 colours for d edges per rank (four here, with the stray one).
  CHECK(colours.colours() <= 7);
  // A plain pipeline needs four (a middle stage's two edges, both ways): what greedy gives.
  CHECK(TransferColours({{1}, {0, 2}, {1, 3}, {2}}).colours() == 4);
  for (int r = 0; r < 8; ++r) {
    std::set<int> seen;
    for (int p = 0; p < 8; ++p)
      for (bool sending : {true, false}) {
        const int q = colours.queue(r, p, sending);
        if (q < 0) continue;
        CHECK(seen.insert(q).second);               // one edge per queue at each rank
        CHECK(q == colours.queue(p, r, !sending));  // both ends meet on the same queue
        const auto edge = colours.edge_of(r, q - 1);
        CHECK(edge == (sending ? std::pair{r, p} : std::pair{p, r}));
      }
  }
  CHECK(colours.queue(0, 3, true) == -1);  // not peers
}

namespace {
// Host storage that counts what it allocates, in place of DeviceArray<float>.
struct CountedStorage {
  explicit CountedStorage(std::int64_t count) : values(std::size_t(count)) {}
  float* data() { return values.data(); }
  std::int64_t size() const { return std::int64_t(values.size()); }
  std::vector<float> values;
};
}  // namespace

TEST_CASE("the staging pool allocates in the first step only") {
  BufferPool<CountedStorage> pool;
  // One step's requests: overlapping lifetimes of different sizes, released out of order.
  const auto step = [&] {
    const int a = pool.acquire(1000), b = pool.acquire(10), c = pool.acquire(500);
    pool.release(b);
    const int d = pool.acquire(8);
    CHECK(pool.data(d) != pool.data(a));
    pool.release(a);
    pool.release(c);
    const int e = pool.acquire(900);
    pool.release(d);
    pool.release(e);
  };
  step();
  const int first = pool.allocations();
  CHECK(first == 3);
  for (int i = 0; i < 10; ++i) step();
  CHECK(pool.allocations() == first);
  CHECK(pool.in_use() == 0);
}
