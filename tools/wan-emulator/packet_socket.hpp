// An AF_PACKET socket bound to one network interface, carrying whole Ethernet frames: it reads
// the frames that arrive on the interface (never its own sends: PACKET_IGNORE_OUTGOING), each
// with the kernel's arrival time (SO_TIMESTAMPNS, CLOCK_REALTIME), and writes frames out of it.
// Batches go through recvmmsg/sendmmsg. Not a general socket wrapper: only what the emulator needs.
#pragma once
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace fabtrain::wan {

// One frame to receive into or send from; the caller owns the buffer.
struct FrameSlot {
  char* data = nullptr;
  int64_t capacity = 0;    // receive: buffer size
  int64_t length = 0;      // receive: the frame's real length (may exceed capacity: truncated)
  int64_t arrival_ns = 0;  // receive: kernel arrival time, CLOCK_REALTIME
};

class PacketSocket {
 public:
  // Throws fabtrain::Error naming the interface and the failing call.
  explicit PacketSocket(const std::string& interface_name, int receive_buffer_bytes);
  ~PacketSocket();
  PacketSocket(const PacketSocket&) = delete;
  PacketSocket& operator=(const PacketSocket&) = delete;

  int fd() const { return fd_; }
  const std::string& interface_name() const { return interface_name_; }
  int mtu() const { return mtu_; }

  // Receives up to `count` waiting frames without blocking; returns how many (0 if none).
  int receive(FrameSlot* slots, int count);
  // Sends `count` frames (blocking); returns how many the kernel took, skipping refused ones.
  int send(const FrameSlot* slots, int count);
  // Frames the kernel dropped for this socket since the last call (receive buffer full).
  uint64_t take_kernel_drops();

 private:
  std::string interface_name_;
  int fd_ = -1;
  int ifindex_ = 0;
  int mtu_ = 0;
};

int64_t realtime_now_ns();

}  // namespace fabtrain::wan
