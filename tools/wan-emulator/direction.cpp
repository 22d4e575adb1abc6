// One direction's forwarding loop (see direction.hpp).
#include "direction.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace fabtrain::wan {

// Upper bound on one wait, so a stop request is noticed promptly.
static constexpr int64_t kMaxWaitNs = 20'000'000;

Direction::Direction(std::string name, PacketSocket& from, PacketSocket& to,
                     const DirectionSettings& settings)
    : name_(std::move(name)), from_(from), to_(to), settings_(settings), link_(settings.link) {
  // Ethernet header + optional VLAN tag + the larger MTU of the two ends, rounded up.
  buffer_size_ = ((std::max(from.mtu(), to.mtu()) + 18 + 63) / 64) * 64;
  // Not value-initialised: pages are touched only when frames use them.
  memory_.reset(new char[static_cast<size_t>(buffer_size_) * settings_.buffer_count]);
  free_buffers_.reserve(settings_.buffer_count);
  for (int i = settings_.buffer_count - 1; i >= 0; --i) free_buffers_.push_back(i);
  slots_.resize(settings_.batch);
}

void Direction::take_realtime_priority() {
  // Timer slack 1 ns: wake-ups land when asked, not up to 50 us later.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (!settings_.realtime) {
    scheduling_note_ = "normal scheduling (--no-realtime)";
    return;
  }
  sched_param parameter{};
  parameter.sched_priority = settings_.realtime_priority;
  const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameter);
  scheduling_note_ =
      rc == 0 ? fmt::format("SCHED_FIFO priority {}", settings_.realtime_priority)
              : fmt::format("normal scheduling (SCHED_FIFO refused: {})", std::strerror(rc));
}

void Direction::receive_batch() {
  const int count = std::min<int>(settings_.batch, free_buffers_.size());
  if (count == 0) {
    // Every buffer holds a frame in flight: take one frame off the socket and drop it, so the
    // loss shows up in our counters rather than silently in the kernel's.
    char scratch[64];
    FrameSlot slot{scratch, sizeof scratch};
    stats_.dropped_no_buffer += from_.receive(&slot, 1);
    return;
  }
  int buffers[256];
  const int batch = std::min(count, 256);
  for (int i = 0; i < batch; ++i) {
    buffers[i] = free_buffers_.back();
    free_buffers_.pop_back();
    slots_[i] =
        FrameSlot{memory_.get() + static_cast<size_t>(buffers[i]) * buffer_size_, buffer_size_};
  }
  const int received = from_.receive(slots_.data(), batch);
  for (int i = 0; i < batch; ++i) {
    if (i >= received) {  // not used this time
      free_buffers_.push_back(buffers[i]);
      continue;
    }
    const FrameSlot& slot = slots_[i];
    if (slot.length > buffer_size_) {  // truncated: a GRO/TSO super-frame, offloads were left on
      ++stats_.dropped_oversize;
      free_buffers_.push_back(buffers[i]);
      continue;
    }
    const auto due = link_.admit(slot.arrival_ns, slot.length);
    if (!due) {
      ++stats_.dropped_queue_full;
      free_buffers_.push_back(buffers[i]);
      continue;
    }
    in_flight_.push_back({buffers[i], slot.length, *due});
  }
}

void Direction::send_due(int64_t now_ns) {
  while (!in_flight_.empty() && in_flight_.front().due_ns <= now_ns + settings_.send_ahead_ns) {
    int count = 0;
    while (count < settings_.batch && count < static_cast<int>(in_flight_.size()) &&
           in_flight_[count].due_ns <= now_ns + settings_.send_ahead_ns) {
      const InFlight& frame = in_flight_[count];
      slots_[count] = FrameSlot{memory_.get() + static_cast<size_t>(frame.buffer) * buffer_size_,
                                buffer_size_, frame.length};
      ++count;
    }
    const int sent = to_.send(slots_.data(), count);
    const int64_t sent_ns = realtime_now_ns();
    for (int i = 0; i < count; ++i) {
      const InFlight& frame = in_flight_.front();
      if (i < sent)
        stats_.record_sent(sent_ns - frame.due_ns, frame.length);
      else
        ++stats_.dropped_send_error;
      free_buffers_.push_back(frame.buffer);
      in_flight_.pop_front();
    }
    now_ns = sent_ns;
  }
}

void Direction::run(const std::atomic<bool>& stop) {
  take_realtime_priority();
  pollfd watch{from_.fd(), POLLIN, 0};
  while (!stop.load(std::memory_order_relaxed)) {
    int64_t now_ns = realtime_now_ns();
    send_due(now_ns);
    now_ns = realtime_now_ns();
    int64_t wait_ns = kMaxWaitNs;
    if (!in_flight_.empty())
      wait_ns = std::clamp<int64_t>(in_flight_.front().due_ns - settings_.send_ahead_ns - now_ns, 0,
                                    kMaxWaitNs);
    const timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000),
                           static_cast<long>(wait_ns % 1'000'000'000)};
    const int ready = ppoll(&watch, 1, &timeout, nullptr);
    if (ready < 0 && errno != EINTR)
      fail("ppoll on '{}': {}", from_.interface_name(), std::strerror(errno));
    if (ready > 0) receive_batch();
  }
  stats_.dropped_by_kernel += from_.take_kernel_drops();
}

}  // namespace fabtrain::wan
