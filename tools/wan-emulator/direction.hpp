// One direction of the emulated link: a thread that reads frames arriving on one interface,
// holds each until the link model says it leaves the far end (arrival time + queueing +
// serialisation + one-way delay), then writes it out of the other interface, and records how
// late it was. It owns a fixed pool of frame buffers; a frame that finds none free is dropped.
// It does not decide policy (rates, delays): that is the LinkModel's.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "lateness_stats.hpp"
#include "link_model.hpp"
#include "packet_socket.hpp"

namespace fabtrain::wan {

struct DirectionSettings {
  LinkParameters link;
  int buffer_count = 16384;   // frames that may be in flight at once in this direction
  int batch = 64;             // frames per recvmmsg/sendmmsg
  int64_t send_ahead_ns = 0;  // frames due this soon are sent in the current batch
  bool realtime = true;       // ask for SCHED_FIFO
  int realtime_priority = 50;
};

class Direction {
 public:
  Direction(std::string name, PacketSocket& from, PacketSocket& to,
            const DirectionSettings& settings);

  // The thread body: runs until `stop` is set. Throws fabtrain::Error on a socket failure.
  void run(const std::atomic<bool>& stop);

  const std::string& name() const { return name_; }
  const LatenessStats& stats() const { return stats_; }
  // Set by run(): whether SCHED_FIFO was granted, or why not.
  const std::string& scheduling_note() const { return scheduling_note_; }

 private:
  struct InFlight {
    int buffer;
    int64_t length;
    int64_t due_ns;
  };

  void take_realtime_priority();
  void receive_batch();
  void send_due(int64_t now_ns);

  std::string name_;
  PacketSocket& from_;
  PacketSocket& to_;
  DirectionSettings settings_;
  LinkModel link_;
  int64_t buffer_size_;
  std::unique_ptr<char[]> memory_;  // buffer_count buffers of buffer_size_ bytes
  std::vector<int> free_buffers_;
  std::deque<InFlight> in_flight_;  // in due-time order (the link model keeps FIFO order)
  std::vector<FrameSlot> slots_;    // scratch for one batch
  LatenessStats stats_;
  std::string scheduling_note_;
};

}  // namespace fabtrain::wan
