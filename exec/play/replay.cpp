// Replaying a rank's stream (see replay.hpp).
#include "exec/play/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "common/error.hpp"
#include "exec/comm/watchdog.hpp"
#include "plan/request_rules.hpp"
#include "plan/verb.hpp"

namespace fabtrain {

namespace {

using Clock = std::chrono::steady_clock;

std::size_t whole_floats(double bytes) {
  return std::size_t(std::ceil(std::max(0.0, bytes) / 4.0));
}

}  // namespace

std::size_t replay_message_floats(const Schedule& schedule, const Instruction& instruction) {
  if (const auto* s = std::get_if<Send>(&instruction)) return whole_floats(s->bytes);
  if (const auto* r = std::get_if<Recv>(&instruction)) return whole_floats(r->bytes);
  if (const auto* c = std::get_if<Collective>(&instruction)) {
    const std::size_t n = schedule.groups.at(c->group).size();
    const std::size_t floats = whole_floats(c->bytes);
    return c->op == CollectiveOp::all_reduce ? floats : (floats + n - 1) / n * n;
  }
  return 0;
}

// The library's temporaries are Open MPI's (4.1, coll/base): the ring all-reduce keeps two
// segments of count/n elements; the ring reduce-scatter accumulates the whole input in a
// temporary plus two blocks (the default, non-ring algorithm does so on the group's first rank:
// 1.4 GB more than the buffer for GPT-2 medium's gradients over 2 ranks, measured with GNU time's
// maximum RSS). The largest of these over the stream.
ReplayMemory replay_memory(const Schedule& schedule, int rank) {
  ReplayMemory m;
  double largest = 0, in_flight = 0;  // in flight: started, not yet waited
  std::map<int, double> started;      // request -> its buffer's bytes
  for (const Instruction& in : schedule.ranks.at(rank)) {
    const double bytes = 4.0 * double(replay_message_floats(schedule, in));
    const int request = request_of(in);
    if (const auto* w = std::get_if<Wait>(&in)) {
      in_flight -= started[w->request];
      started.erase(w->request);
    } else if (request >= 0 && !std::holds_alternative<Wait>(in)) {
      started[request] = bytes;
      in_flight += bytes;
      m.in_flight = std::max(m.in_flight, in_flight);
    }
    largest = std::max(largest, bytes);
    if (std::holds_alternative<Send>(in) && request < 0) m.send_copies += bytes;
    if (const auto* c = std::get_if<Collective>(&in)) {
      const std::vector<int>& group = schedule.groups.at(c->group);
      const double n = double(group.size());
      double temporary = 0;
      if (c->op == CollectiveOp::all_reduce) temporary = 2 * bytes / n;
      if (c->op == CollectiveOp::reduce_scatter) temporary = bytes + 2 * bytes / n;
      m.library = std::max(m.library, temporary);
    }
  }
  m.buffer = largest;
  // A replay rank of gpt2-nano peaks at about 150 MB here (GNU time); medium's zero=2 over 4 ranks
  // measured 3.47 GiB against 3.30 GiB of buffers and temporaries.
  m.process = 256.0 * (1 << 20);
  return m;
}

std::vector<double> modelled_seconds(const Schedule& schedule, int rank, const GpuType& gpu,
                                     const ComputeDefaults& defaults,
                                     const Calibration& calibration) {
  std::vector<double> seconds;
  for (const Instruction& in : schedule.ranks.at(rank))
    seconds.push_back(compute_seconds(in, gpu, schedule.plan.precision, defaults, calibration));
  return seconds;
}

Replayer::Replayer(const Schedule& schedule, int rank, Communicator& comm, const GpuType& gpu,
                   const ComputeDefaults& defaults, const Calibration& calibration,
                   Watchdog* watchdog)
    : schedule_(schedule),
      stream_(schedule.ranks.at(rank)),
      rank_(rank),
      comm_(comm),
      watchdog_(watchdog) {
  check_requests(stream_, rank);  // plan/request_rules.hpp: the player keeps no rule of its own
  seconds_ = modelled_seconds(schedule, rank, gpu, defaults, calibration);
  std::size_t largest = 0;
  for (const Instruction& in : stream_)
    largest = std::max(largest, replay_message_floats(schedule, in));
  buffer_.assign(largest, 0.0f);  // touched once, here: the pages are resident before timing
}

std::vector<InstructionTiming> Replayer::play_step(int step) {
  std::vector<InstructionTiming> timings(stream_.size());
  const Clock::time_point step_start = Clock::now();
  for (std::size_t i = 0; i < stream_.size(); ++i) {
    if (watchdog_)
      watchdog_->begin(fmt::format("rank {} step {} instruction {}: {}", rank_, step + 1, i,
                                   to_string(stream_[i])));
    const Clock::time_point start = Clock::now();
    run(stream_[i], i);
    const Clock::time_point end = Clock::now();
    if (watchdog_) watchdog_->end();
    timings[i] = {std::chrono::duration<double>(start - step_start).count(),
                  std::chrono::duration<double>(end - start).count()};
  }
  return timings;
}

// One std::visit per instruction onto the play() overloads: an instruction without one does not
// compile.
void Replayer::run(const Instruction& instruction, std::size_t index) {
  index_ = index;
  floats_ = replay_message_floats(schedule_, instruction);
  message_ = std::span<float>(buffer_.data(), floats_);
  std::visit([this](const auto& in) { play(in); }, instruction);
}

// A start gets its own buffer, kept until its wait: the smallest pooled one that holds the
// message, else a new one. The message then lives there.
Replayer::InFlight& Replayer::own(int request) {
  InFlight& f = in_flight_[request];
  auto best = pool_.end();
  for (auto it = pool_.begin(); it != pool_.end(); ++it)
    if (it->size() >= floats_ && (best == pool_.end() || it->size() < best->size())) best = it;
  if (best != pool_.end()) {
    f.buffer = std::move(*best);
    pool_.erase(best);
  } else {
    f.buffer.assign(floats_, 0.0f);
  }
  message_ = std::span<float>(f.buffer).first(floats_);
  return f;
}

void Replayer::play(const LoadMicrobatch&) {}  // tokens come from nowhere: nothing to wait for

void Replayer::play(const Forward& in) { sleep_compute(std::max(1, in.end - in.begin)); }
void Replayer::play(const Backward& in) { sleep_compute(std::max(1, in.end - in.begin)); }
void Replayer::play(const OptimizerStep&) { sleep_compute(1); }

// Sleep, do not spin: the cores carry the communication. With requests in flight the sleep is
// cut per block, with the communicator's progress() between (as the interpreter calls it between
// blocks).
void Replayer::sleep_compute(int blocks) {
  const int slices = in_flight_.empty() ? 1 : blocks;
  for (int k = 0; k < slices; ++k) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds_[index_] / slices));
    if (!in_flight_.empty()) comm_.progress();
  }
}

void Replayer::play(const Send& in) {
  const int tag = message_tag(in.mb, in.what == Tensor::gradient);
  if (in.request < 0) {
    comm_.send(in.peer, message_, tag);
    return;
  }
  InFlight& f = own(in.request);
  f.comm = comm_.start_send(in.peer, message_, tag);
}

void Replayer::play(const Recv& in) {
  const int tag = message_tag(in.mb, in.what == Tensor::gradient);
  if (in.request < 0) {
    comm_.recv(in.peer, message_, tag);
    return;
  }
  InFlight& f = own(in.request);
  f.comm = comm_.start_recv(in.peer, message_, tag);
}

void Replayer::play(const Wait& in) {
  const auto it = in_flight_.find(in.request);  // there: the stream's requests were checked
  comm_.wait(it->second.comm);
  pool_.push_back(std::move(it->second.buffer));
  in_flight_.erase(it);
}

void Replayer::play(const Collective& in) {
  const std::vector<int>& group = schedule_.groups.at(in.group);
  const std::size_t chunk = floats_ / group.size();
  int position = 0;
  for (std::size_t k = 0; k < group.size(); ++k)
    if (group[k] == rank_) position = int(k);
  InFlight* f = in.request >= 0 ? &own(in.request) : nullptr;
  const std::span<float> message = message_;
  int request = -1;
  switch (in.op) {
    case CollectiveOp::all_reduce:
      if (f)
        request = comm_.start_all_reduce(in.group, message);
      else
        comm_.all_reduce(in.group, message);
      break;
    case CollectiveOp::reduce_scatter:
      if (f)
        request = comm_.start_reduce_scatter(in.group, message, message.first(chunk));
      else
        comm_.reduce_scatter(in.group, message, message.first(chunk));
      break;
    case CollectiveOp::all_gather: {
      const std::span<float> mine = message.subspan(position * chunk, chunk);
      if (f)
        request = comm_.start_all_gather(in.group, mine, message);
      else
        comm_.all_gather(in.group, mine, message);
      break;
    }
  }
  if (f) f->comm = request;
}

}  // namespace fabtrain
