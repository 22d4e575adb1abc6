// The symbolic player (see symbolic_run.hpp): ranks advance in turn until each is blocked on a
// receive with no message or a collective whose group has not all arrived; a full turn without
// progress ends the play, done or stuck.
#include "plan/symbolic_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

#include "plan/collective_pairing.hpp"

namespace fabtrain {
namespace {

// What one rank holds while playing: per microbatch, blocks forwarded and backwarded.
struct RankState {
  std::size_t pc = 0;
  bool arrived = false;  // waiting at the collective at pc, counted in its group
  std::map<int, int> forward_blocks, backward_blocks;
  int in_flight = 0;
  double activation = 0;
};

bool same_collective(const Collective& a, const Collective& b) {
  return a.op == b.op && a.purpose == b.purpose && a.group == b.group && a.bytes == b.bytes &&
         a.mb == b.mb && a.block == b.block && a.begin == b.begin && a.end == b.end;
}

class Player {
 public:
  explicit Player(const Schedule& s) : s_(s), state_(s.world), arrived_(s.groups.size(), 0) {
    result_.instructions_done.assign(s.world, 0);
    result_.peak_in_flight.assign(s.world, 0);
    result_.peak_activation_bytes.assign(s.world, 0);
  }

  SymbolicRun play() {
    if (int(s_.ranks.size()) != s_.world)
      return failed(fmt::format("schedule has {} streams for {} ranks", s_.ranks.size(), s_.world));
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
    for (const auto& [key, queue] : channels_)
      if (!queue.empty()) {
        const auto& [from, to, what] = key;
        return failed(fmt::format("rank {} sent {} mb={} to rank {}, never received", from,
                                  to_string(Tensor(what)), queue.front().mb, to));
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
      if (backwarded > forwarded) {
        error_ = fmt::format("rank {} at #{} '{}': backward of blocks never forwarded", r, st.pc,
                             to_string(in));
        return false;
      }
      if (backwarded == forwarded) --st.in_flight;
      st.activation -= b->activation_bytes;
    } else if (const auto* send = std::get_if<Send>(&in)) {
      if (!valid_rank(r, send->peer)) return false;
      channels_[{r, send->peer, int(send->what)}].push_back(*send);
    } else if (const auto* recv = std::get_if<Recv>(&in)) {
      if (!valid_rank(r, recv->peer)) return false;
      auto& queue = channels_[{recv->peer, r, int(recv->what)}];
      if (queue.empty()) return false;
      const Send& sent = queue.front();
      if (sent.mb != recv->mb || sent.bytes != recv->bytes) {
        error_ = fmt::format("rank {} at #{} '{}' but rank {} sent mb={} bytes={}", r, st.pc,
                             to_string(in), recv->peer, sent.mb, sent.bytes);
        return false;
      }
      queue.pop_front();
    } else if (const auto* c = std::get_if<Collective>(&in)) {
      return collective(r, *c);
    }
    done(r);
    return true;
  }

  bool valid_rank(int r, int peer) {
    if (peer >= 0 && peer < s_.world && peer != r) return true;
    error_ = fmt::format("rank {} at #{} '{}': peer {} is not another rank of {}", r, state_[r].pc,
                         to_string(s_.ranks[r][state_[r].pc]), peer, s_.world);
    return false;
  }

  // Marks r as arrived; the last member to arrive completes the collective for all.
  bool collective(int r, const Collective& c) {
    RankState& st = state_[r];
    if (c.group < 0 || c.group >= int(s_.groups.size()) ||
        std::find(s_.groups[c.group].begin(), s_.groups[c.group].end(), r) ==
            s_.groups[c.group].end()) {
      error_ = fmt::format("rank {} at #{} '{}': not a member of group {}", r, st.pc,
                           to_string(Instruction(c)), c.group);
      return false;
    }
    if (const auto why = pairing_error(c)) {
      error_ = fmt::format("rank {} at #{} '{}': {}", r, st.pc, to_string(Instruction(c)), *why);
      return false;
    }
    if (st.arrived) return false;
    st.arrived = true;
    const auto& members = s_.groups[c.group];
    if (++arrived_[c.group] < int(members.size())) return false;
    for (int m : members) {
      const auto& other = std::get<Collective>(s_.ranks[m][state_[m].pc]);
      if (!same_collective(c, other)) {
        error_ =
            fmt::format("collective mismatch in group {}: rank {} at '{}', rank {} at '{}'",
                        c.group, r, to_string(Instruction(c)), m, to_string(Instruction(other)));
        return false;
      }
    }
    arrived_[c.group] = 0;
    for (int m : members) {
      state_[m].arrived = false;
      done(m);
    }
    return true;
  }

  const Schedule& s_;
  std::vector<RankState> state_;
  std::vector<int> arrived_;  // per group: members waiting at a collective of that group
  std::map<std::tuple<int, int, int>, std::deque<Send>> channels_;  // (from, to, tensor)
  std::string error_;
  SymbolicRun result_;
};

}  // namespace

SymbolicRun symbolic_run(const Schedule& schedule) { return Player(schedule).play(); }

}  // namespace fabtrain
