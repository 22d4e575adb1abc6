// Lanes of a timeline (see timeline.hpp).
#include "plan/timeline.hpp"

#include "plan/verb.hpp"

namespace fabtrain {

const char* lane_name(int lane) {
  switch (lane) {
    case kComputeLane:
      return "compute";
    case kCommunicationLane:
      return "communication";
    default:
      return "in flight";
  }
}

int blocking_lane(const Instruction& instruction) {
  return is_communication(instruction) ? kCommunicationLane : kComputeLane;
}

}  // namespace fabtrain
