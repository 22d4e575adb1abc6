// SimGrid's process-wide state, owned in one place: the one Engine (SimGrid allows a single
// Engine per process, and a second one aborts), the root zone every slice's zone hangs under,
// the registry of slice platforms (one per slice shape), the mailbox cache, and whether a
// simulation has run here (SimGrid 3.32 seals the root zone at the first run, after which no
// slice can be added).
// The Engine is created on first use with the network model chosen on purpose: CM02 (alpha-beta
// with max-min sharing) without crosstraffic and with a TCP-gamma too large to bind, because the
// default LV08 TCP model multiplies latencies and caps flows by its own window, which would
// dominate wide-area results; window limits are applied per flow by the simulator instead (see
// slice_platform.hpp).
// Not here: building a slice's zones (slice_platform.hpp), playing schedules (simulator.hpp),
// simulating in worker processes (sim_pool.hpp).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "platforms/slice.hpp"

namespace simgrid::s4u {
class Engine;
class Host;
class Mailbox;
class NetZone;
}  // namespace simgrid::s4u

namespace fabtrain {

class SlicePlatform;

class SimProcess {
 public:
  // This process's state, created (with the Engine and the root zone) on first use.
  static SimProcess& get();

  simgrid::s4u::Engine& engine() { return *engine_; }
  simgrid::s4u::NetZone* root_zone() { return root_; }

  // The platform of a slice of this shape (same VMs, sites and networks), built on first
  // request; throws fabtrain::Error for a new shape once a simulation has run.
  SlicePlatform& platform(const Slice& slice);

  // Whether a simulation has run in this process (after which no slice can be added).
  bool started() const { return started_; }
  void mark_started() { started_ = true; }

  // The mailbox "<from>><to>/<kind>": mailboxes live as long as the Engine, so each is looked up
  // by name once per process, not once per instruction and run.
  simgrid::s4u::Mailbox* mailbox(simgrid::s4u::Host* from, simgrid::s4u::Host* to,
                                 const char* kind);

 private:
  SimProcess();
  simgrid::s4u::Engine* engine_ = nullptr;  // lives until the process ends, by design
  simgrid::s4u::NetZone* root_ = nullptr;
  std::map<std::string, std::unique_ptr<SlicePlatform>> platforms_;  // by SlicePlatform::shape_key
  int platforms_built_ = 0;  // zone names must stay unique, also after a failed build
  bool started_ = false;
  std::map<std::tuple<simgrid::s4u::Host*, simgrid::s4u::Host*, std::string>,
           simgrid::s4u::Mailbox*>
      mailboxes_;
};

}  // namespace fabtrain
