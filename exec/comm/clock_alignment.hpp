// One time line for every rank's measurements: each rank's steady clock mapped onto rank 0's.
// At the start of a timed run all ranks meet at a barrier and take that instant as their own
// origin; rank 0 then pings each rank a few times (the clocks' difference is estimated from the
// exchange of smallest round trip, at its midpoint, as NTP does) and sends it its offset. Ranks
// on one host share the clock exactly; across hosts the error is at most half that round trip.
// Not here: the step's timings (exec/run/step_timings.hpp) or the trace (exec/run/run_record.hpp).
#pragma once
#include <chrono>

#include "exec/comm/communicator.hpp"

namespace fabtrain {

class AlignedClock {
 public:
  using Clock = std::chrono::steady_clock;
  AlignedClock() : origin_(Clock::now()) {}  // not aligned: this rank's clock from now
  AlignedClock(Clock::time_point origin, double offset_s) : origin_(origin), offset_s_(offset_s) {}
  // Seconds from the run's origin on rank 0's clock.
  double seconds(Clock::time_point t) const {
    return std::chrono::duration<double>(t - origin_).count() + offset_s_;
  }
  double offset_s() const { return offset_s_; }  // rank 0's clock minus this rank's

 private:
  Clock::time_point origin_;
  double offset_s_ = 0;
};

// Collective over all ranks of comm (point-to-point messages with rank 0; the tag is above every
// pipeline transfer's). rounds: pings per rank.
AlignedClock align_clocks(Communicator& comm, int rounds = 8);

}  // namespace fabtrain
