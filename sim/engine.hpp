// The process's one SimGrid Engine (SimGrid allows a single Engine per process, and a second one
// aborts). Created on first use with the network model chosen on purpose: CM02 (alpha-beta with
// max-min sharing) without crosstraffic and with a TCP-gamma too large to bind, because the default LV08 TCP
// model multiplies latencies and caps flows by its own window, which would dominate wide-area
// results; window limits are applied per flow by the simulator instead (see slice_platform.hpp).
// Not here: platforms (slice_platform.hpp) or playing schedules (simulator.hpp).
#pragma once
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/NetZone.hpp>

namespace fabtrain {

simgrid::s4u::Engine& simulation_engine();

// The root zone every slice's zone hangs under.
simgrid::s4u::NetZone* simulation_root_zone();
// Whether a simulation has run in this process (after which no slice can be added).
bool simulation_started();
void mark_simulation_started();

}  // namespace fabtrain
