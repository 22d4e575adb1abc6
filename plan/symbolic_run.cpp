// The symbolic player (see symbolic_run.hpp): ranks advance in turn until each is blocked on a
// receive with no message, a collective whose group has not all arrived, or a wait whose start
// cannot complete yet; a full turn without progress ends the play, done or stuck.
#include "plan/symbolic_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "plan/collective_pairing.hpp"
#include "plan/request_rules.hpp"

namespace fabtrain {
namespace {

// A non-blocking start not yet waited: a collective call of a group, or a message of a channel.
struct Pending {
  Awaits what = Awaits::collective;
  std::size_t start_pc = 0;
  double bytes = 0;
  int group = -1, call = -1;                      // collective
  std::tuple<int, int, int> channel{-1, -1, -1};  // send or recv: (from, to, tensor)
  std::size_t index = 0;                          // send or recv: position in the channel
};

// What one rank holds while playing: per microbatch, blocks forwarded and backwarded, and its
// requests in flight.
struct RankState {
  std::size_t pc = 0;
  int blocking_call = -1;        // the call of the blocking collective at pc, once arrived
  long blocking_recv = -1;       // the channel position of the blocking receive at pc, once posted
  std::map<int, int> next_call;  // per group: this rank's calls so far
  std::map<int, Pending> pending;
  double in_flight_bytes = 0;
  std::map<int, int> forward_blocks, backward_blocks;
  int in_flight = 0;
  double activation = 0;
};

// One collective call of a group: the first member's instruction, and who has arrived.
struct Call {
  Collective collective;
  int arrived = 0;
  bool complete = false;
};

// A point-to-point channel: messages in send order, and how many receives were posted.
struct Channel {
  std::vector<Send> sent;
  std::size_t posted = 0;
};

bool same_collective(const Collective& a, const Collective& b) {
  return a.op == b.op && a.purpose == b.purpose && a.group == b.group && a.bytes == b.bytes &&
         a.mb == b.mb && a.block == b.block && a.begin == b.begin && a.end == b.end;
}

class Player {
 public:
  explicit Player(const Schedule& s) : s_(s), state_(s.world), calls_(s.groups.size()) {
    result_.instructions_done.assign(s.world, 0);
    result_.peak_in_flight.assign(s.world, 0);
    result_.peak_activation_bytes.assign(s.world, 0);
    result_.peak_request_bytes.assign(s.world, 0);
  }

  SymbolicRun play() {
    if (int(s_.ranks.size()) != s_.world)
      return failed(fmt::format("schedule has {} streams for {} ranks", s_.ranks.size(), s_.world));
    // Each rank's requests first (request_rules.hpp): the play below may assume them kept.
    for (int r = 0; r < s_.world; ++r)
      if (const auto e = request_error(s_.ranks[r]))
        return failed(fmt::format("rank {} at #{} '{}': {}", r, e->at,
                                  to_string(s_.ranks[r][e->at]), e->why));
    bool progress = true;
    while (progress && error_.empty()) {
      progress = false;
      for (int r = 0; r < s_.world && error_.empty(); ++r)
        while (state_[r].pc < s_.ranks[r].size() && error_.empty() && step(r)) progress = true;
    }
    if (!error_.empty()) return failed(error_);
    std::vector<std::string> stuck;
    for (int r = 0; r < s_.world; ++r)
      if (state_[r].pc < s_.ranks[r].size())
        stuck.push_back(fmt::format("rank {} at #{} '{}'", r, state_[r].pc,
                                    to_string(s_.ranks[r][state_[r].pc])));
    if (!stuck.empty()) {
      std::string list;
      for (std::size_t i = 0; i < std::min<std::size_t>(stuck.size(), 8); ++i)
        list += (i ? "; " : "") + stuck[i];
      if (stuck.size() > 8) list += fmt::format("; and {} more", stuck.size() - 8);
      return failed(
          fmt::format("deadlock: {} of {} ranks stuck: {}", stuck.size(), s_.world, list));
    }
    for (const auto& [key, channel] : channels_)
      if (channel.sent.size() > channel.posted) {
        const auto& [from, to, what] = key;
        return failed(fmt::format("rank {} sent {} mb={} to rank {}, never received", from,
                                  to_string(Tensor(what)), channel.sent[channel.posted].mb, to));
      }
    result_.ok = true;
    return result_;
  }

 private:
  SymbolicRun failed(std::string message) {
    result_.ok = false;
    result_.message = std::move(message);
    return result_;
  }

  void done(int r) {
    ++state_[r].pc;
    ++result_.instructions_done[r];
  }

  bool refuse(int r, const std::string& why) {
    error_ = fmt::format("rank {} at #{} '{}': {}", r, state_[r].pc,
                         to_string(s_.ranks[r][state_[r].pc]), why);
    return false;
  }

  // Plays rank r's next instruction; false when it is blocked (or an error was found).
  bool step(int r) {
    RankState& st = state_[r];
    const Instruction& in = s_.ranks[r][st.pc];
    if (const auto* f = std::get_if<Forward>(&in)) {
      if (st.forward_blocks[f->mb]++ == 0) ++st.in_flight;
      st.forward_blocks[f->mb] += f->end - f->begin - 1;
      st.activation += f->activation_bytes;
      result_.peak_in_flight[r] = std::max(result_.peak_in_flight[r], st.in_flight);
      result_.peak_activation_bytes[r] = std::max(result_.peak_activation_bytes[r], st.activation);
    } else if (const auto* b = std::get_if<Backward>(&in)) {
      int& backwarded = st.backward_blocks[b->mb];
      backwarded += b->end - b->begin;
      const int forwarded = st.forward_blocks[b->mb];
      if (backwarded > forwarded) return refuse(r, "backward of blocks never forwarded");
      if (backwarded == forwarded) --st.in_flight;
      st.activation -= b->activation_bytes;
    } else if (const auto* send = std::get_if<Send>(&in)) {
      if (!valid_rank(r, send->peer)) return false;
      auto& channel = channels_[{r, send->peer, int(send->what)}];
      if (send->request >= 0) {
        Pending p{Awaits::send, st.pc, send->bytes};
        p.channel = {r, send->peer, int(send->what)};
        p.index = channel.sent.size();
        if (!start(r, send->request, p)) return false;
      }
      channel.sent.push_back(*send);  // eager: the message is there for its receiver
    } else if (const auto* recv = std::get_if<Recv>(&in)) {
      if (!valid_rank(r, recv->peer)) return false;
      const std::tuple<int, int, int> key{recv->peer, r, int(recv->what)};
      auto& channel = channels_[key];
      if (recv->request >= 0) {
        Pending p{Awaits::recv, st.pc, recv->bytes};
        p.channel = key;
        p.index = channel.posted++;
        if (!start(r, recv->request, p)) return false;
      } else {
        if (st.blocking_recv < 0) st.blocking_recv = long(channel.posted++);
        if (!received(r, *recv, key, std::size_t(st.blocking_recv))) return false;
        st.blocking_recv = -1;
      }
    } else if (const auto* c = std::get_if<Collective>(&in)) {
      if (c->request >= 0) {
        const int call = arrive(r, *c);
        if (call < 0) return false;
        Pending p{Awaits::collective, st.pc, c->bytes};
        p.group = c->group;
        p.call = call;
        if (!start(r, c->request, p)) return false;
      } else {
        if (st.blocking_call < 0) st.blocking_call = arrive(r, *c);
        if (st.blocking_call < 0) return false;
        if (!calls_[c->group][st.blocking_call].complete) return false;
        st.blocking_call = -1;
      }
    } else if (const auto* w = std::get_if<Wait>(&in)) {
      if (!wait(r, *w)) return false;
    }
    done(r);
    return true;
  }

  // Registers request `request` of rank r as started.
  bool start(int r, int request, const Pending& p) {
    RankState& st = state_[r];
    st.pending[request] = p;
    st.in_flight_bytes += p.bytes;
    result_.peak_request_bytes[r] = std::max(result_.peak_request_bytes[r], st.in_flight_bytes);
    return true;
  }

  // A wait completes when its start can: a collective when every member has started the call,
  // a send when its receiver has posted the receive (rendezvous), a receive when its message
  // was sent.
  bool wait(int r, const Wait& w) {
    RankState& st = state_[r];
    const auto it = st.pending.find(w.request);  // there: the rank's requests were checked
    const Pending& p = it->second;
    switch (p.what) {
      case Awaits::collective:
        if (!calls_[p.group][p.call].complete) return false;
        break;
      case Awaits::send:
        if (channels_[p.channel].posted <= p.index) return false;
        break;
      case Awaits::recv: {
        const auto& recv = std::get<Recv>(s_.ranks[r][p.start_pc]);
        if (!received(r, recv, p.channel, p.index)) return false;
        break;
      }
    }
    st.in_flight_bytes -= p.bytes;
    st.pending.erase(it);
    return true;
  }

  // Whether message `index` of the channel has been sent; an error when it does not match.
  bool received(int r, const Recv& recv, const std::tuple<int, int, int>& key, std::size_t index) {
    const auto& channel = channels_[key];
    if (channel.sent.size() <= index) return false;
    const Send& sent = channel.sent[index];
    if (sent.mb != recv.mb || sent.bytes != recv.bytes) {
      error_ = fmt::format("rank {} at #{} '{}' but rank {} sent mb={} bytes={}", r, state_[r].pc,
                           to_string(Instruction(recv)), recv.peer, sent.mb, sent.bytes);
      return false;
    }
    return true;
  }

  bool valid_rank(int r, int peer) {
    if (peer >= 0 && peer < s_.world && peer != r) return true;
    return refuse(r, fmt::format("peer {} is not another rank of {}", peer, s_.world));
  }

  // Counts r as arrived at its next call of the group (members call in the same order); returns
  // the call, or -1 on an error. The last member to arrive completes it.
  int arrive(int r, const Collective& c) {
    if (c.group < 0 || c.group >= int(s_.groups.size()) ||
        std::find(s_.groups[c.group].begin(), s_.groups[c.group].end(), r) ==
            s_.groups[c.group].end()) {
      refuse(r, fmt::format("not a member of group {}", c.group));
      return -1;
    }
    if (const auto why = pairing_error(c)) {
      refuse(r, *why);
      return -1;
    }
    auto& calls = calls_[c.group];
    const int index = state_[r].next_call[c.group]++;
    if (index == int(calls.size())) calls.push_back(Call{c});
    Call& call = calls[index];
    if (!same_collective(call.collective, c)) {
      error_ = fmt::format(
          "collective mismatch in group {}: call #{} is '{}' on one rank, rank {} at '{}'", c.group,
          index, to_string(Instruction(call.collective)), r, to_string(Instruction(c)));
      return -1;
    }
    if (++call.arrived == int(s_.groups[c.group].size())) call.complete = true;
    return index;
  }

  const Schedule& s_;
  std::vector<RankState> state_;
  std::vector<std::vector<Call>> calls_;                   // per group, in call order
  std::map<std::tuple<int, int, int>, Channel> channels_;  // (from, to, tensor)
  std::string error_;
  SymbolicRun result_;
};

}  // namespace

SymbolicRun symbolic_run(const Schedule& schedule) { return Player(schedule).play(); }

}  // namespace fabtrain
