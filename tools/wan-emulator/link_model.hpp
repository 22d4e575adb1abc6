// The model of one direction of the emulated wide-area link: a drop-tail queue in front of a
// serialiser of the configured rate, followed by a fixed one-way propagation delay.
// Pure arithmetic on timestamps (no sockets, no clocks), so it can be tested alone.
// It is not a jitter, loss or reordering model: the link is a clean long pipe.
#pragma once
#include <cstdint>
#include <optional>

namespace fabtrain::wan {

struct LinkParameters {
  int64_t delay_ns = 0;           // one-way propagation delay
  double rate_bits_per_s = 0;     // serialisation rate; 0 = unlimited (no queue either)
  int64_t queue_limit_bytes = 0;  // drop-tail: bytes waiting for the serialiser, at most
};

class LinkModel {
 public:
  explicit LinkModel(const LinkParameters& parameters);

  // A frame of `bytes` arrived at `arrival_ns`: returns when it must leave the far end,
  // or nothing when the queue in front of the serialiser is full (the frame is dropped).
  // Arrivals must be given in time order.
  std::optional<int64_t> admit(int64_t arrival_ns, int64_t bytes);

  // Bytes still waiting for (or in) the serialiser at time `now_ns`.
  int64_t backlog_bytes(int64_t now_ns) const;

  const LinkParameters& parameters() const { return parameters_; }

 private:
  int64_t serialisation_ns(int64_t bytes) const;

  LinkParameters parameters_;
  int64_t serialiser_free_ns_ = 0;  // when the serialiser finishes what it has accepted
};

}  // namespace fabtrain::wan
