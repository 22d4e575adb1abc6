// What one direction of the emulator did: frames forwarded and dropped (and why), and how late
// each frame left compared with when the link model said it should (a histogram in microseconds).
// Lateness is the emulator's own error: a run whose frames were often late measured the
// emulator, not the link. Not thread-safe: each direction owns one and the main thread reads it
// after the direction has stopped.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fabtrain::wan {

class LatenessStats {
 public:
  static constexpr int64_t kBucketNs = 1000;                 // 1 us resolution
  static constexpr int64_t kHistogramLimitNs = 100'000'000;  // later than 100 ms: one bucket
  static constexpr int64_t kLateThresholdNs = 1'000'000;     // "late": more than 1 ms
  // A run that barely used the link (an MPI start-up's few dozen frames) measured nothing through
  // it: one late frame of 48 says nothing about the emulator. So ten late frames at least.
  static constexpr uint64_t kMinLateFrames = 10;

  LatenessStats();

  // A frame left `lateness_ns` after its due time (negative: sent early within the send-ahead).
  void record_sent(int64_t lateness_ns, int64_t bytes);
  void add(const LatenessStats& other);

  // Lateness at quantile q in [0, 1] (bucket resolution), in nanoseconds; 0 when empty.
  int64_t quantile_ns(double q) const;
  int64_t max_ns() const { return max_ns_; }
  uint64_t forwarded() const { return forwarded_; }
  uint64_t forwarded_bytes() const { return forwarded_bytes_; }
  uint64_t late() const { return late_; }
  // Whether more than `max_fraction` of the frames (and at least kMinLateFrames) left late: then
  // the run measured the emulator, not the link, and is not valid.
  bool too_late(double max_fraction) const;

  uint64_t dropped_queue_full = 0;  // drop-tail: the serialiser's queue was full
  uint64_t dropped_no_buffer = 0;   // every frame buffer was holding a frame in flight
  uint64_t dropped_oversize = 0;    // larger than the buffers (offloads left on?)
  uint64_t dropped_send_error = 0;  // the kernel refused to send it
  uint64_t dropped_by_kernel = 0;   // the packet socket's receive buffer overflowed

  nlohmann::json to_json() const;
  // One line for people: "12345 frames, late p50 3 us p99 40 us max 1.2 ms, 0 late > 1 ms".
  std::string summary() const;

 private:
  std::vector<uint64_t> histogram_;  // bucket i: lateness in [i, i+1) us; last: the rest
  uint64_t forwarded_ = 0;
  uint64_t forwarded_bytes_ = 0;
  uint64_t late_ = 0;
  int64_t max_ns_ = 0;
};

}  // namespace fabtrain::wan
