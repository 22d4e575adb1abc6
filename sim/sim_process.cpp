// Creating the process's Engine once, configured and silenced, and the state that hangs on it.
#include "sim/sim_process.hpp"

#include <xbt/log.h>

#include <simgrid/s4u.hpp>

#include "sim/slice_platform.hpp"

namespace fabtrain {

namespace sg4 = simgrid::s4u;

SimProcess& SimProcess::get() {
  static SimProcess* process = new SimProcess();  // never destroyed: SimGrid's objects outlive main
  return *process;
}

SimProcess::SimProcess() {
  static char program[] = "fabtrain-sim";
  static char quiet[] = "--log=root.thres:critical";
  static char* argv[] = {program, quiet, nullptr};
  int argc = 2;
  engine_ = new sg4::Engine(&argc, argv);
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  // TCP-gamma 0 would also void per-flow rates (CM02 bounds a flow by min(rate, gamma/2RTT), and
  // a bound of 0 means none): a huge gamma removes the window and keeps Comm::set_rate.
  sg4::Engine::set_config("network/TCP-gamma:1e18");
  // Every rank and every started collective is an actor, each on its own stack. SimGrid's
  // default of 8 MiB, mapped and unmapped per actor, cost more than the simulation itself and
  // reserves 8 GiB of address space at 1024 ranks (a memory cap, ulimit -v, refuses it). The
  // actors' code (sim/simulator.cpp) is a flat loop that recurses nowhere: 256 KiB holds it many
  // times over, and the guard page still ends an overflow with a signal.
  sg4::Engine::set_config("contexts/stack-size:256");
  xbt_log_control_set("root.thres:critical");
  root_ = sg4::create_full_zone("fabtrain");
}

SlicePlatform& SimProcess::platform(const Slice& slice) {
  const auto key = SlicePlatform::shape_key(slice);
  auto it = platforms_.find(key);
  if (it == platforms_.end()) {
    const int id = platforms_built_++;
    it =
        platforms_.emplace(key, std::unique_ptr<SlicePlatform>(new SlicePlatform(slice, id))).first;
  }
  return *it->second;
}

sg4::Mailbox* SimProcess::mailbox(sg4::Host* from, sg4::Host* to, const char* kind) {
  auto& box = mailboxes_[{from, to, kind}];
  if (!box) box = sg4::Mailbox::by_name(from->get_name() + ">" + to->get_name() + "/" + kind);
  return box;
}

}  // namespace fabtrain
