// One timeline of a step (or a run), the same for a prediction and a measurement: spans of the
// schedule's instructions per rank and lane. The simulator (sim/) records it from its clock, the
// executor (exec/) from each rank's steady clock aligned to rank 0's; plan/chrome_trace.hpp
// writes either as one Chrome trace, so Perfetto shows them with the same processes and lanes.
#pragma once
#include "plan/schedule.hpp"

namespace fabtrain {

// Lanes (a Chrome trace's threads) of each rank.
inline constexpr int kComputeLane = 0;        // forward, backward, optimizer, loads
inline constexpr int kCommunicationLane = 1;  // communication the rank waits for
inline constexpr int kSendsInFlightLane = 2;  // transfers and started collectives in flight,
                                              // waited for or not (simulator)
inline constexpr int kLaneCount = 3;
const char* lane_name(int lane);  // "compute", "communication", "in flight"
// The lane a player that waits for every instruction in turn (the executor) puts it in.
int blocking_lane(const Instruction& instruction);

struct TimelineEvent {
  int rank = 0;
  int lane = kComputeLane;
  int instruction = 0;  // index in the rank's stream
  double start_s = 0;   // from the start of the timeline
  double end_s = 0;
  int step = 0;
};

}  // namespace fabtrain
