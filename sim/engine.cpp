// Creating the process-wide Engine once, configured and silenced.
#include "sim/engine.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <xbt/log.h>

namespace fabtrain {

namespace sg4 = simgrid::s4u;

sg4::Engine& simulation_engine() {
  static sg4::Engine* engine = [] {
    static char program[] = "fabtrain-sim";
    static char quiet[] = "--log=root.thres:critical";
    static char* argv[] = {program, quiet, nullptr};
    int argc = 2;
    auto* e = new sg4::Engine(&argc, argv);  // lives until the process ends, by design
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    // TCP-gamma 0 would also void per-flow rates (CM02 bounds a flow by min(rate, gamma/2RTT),
    // and a bound of 0 means none): a huge gamma removes the window and keeps Comm::set_rate.
    sg4::Engine::set_config("network/TCP-gamma:1e18");
    xbt_log_control_set("root.thres:critical");
    return e;
  }();
  return *engine;
}

sg4::NetZone* simulation_root_zone() {
  static sg4::NetZone* root = [] {
    simulation_engine();
    return sg4::create_full_zone("fabtrain");
  }();
  return root;
}

namespace {
bool started = false;
}
bool simulation_started() { return started; }
void mark_simulation_started() { started = true; }

}  // namespace fabtrain
