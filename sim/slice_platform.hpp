// The SimGrid platform of one slice, built once per slice shape and process (SimProcess) and reused
// by every simulation of that slice. A process holds several slices side by side, each its own zone
// under the root zone, but SimGrid 3.32 seals the root at the first run and refuses new zones
// afterwards: construct every Simulator (one per slice shape) before the first run, or use one
// process per slice; a slice arriving later is a clear error. Hosts are "<slice>#<k>/gpu<i>".
// Layout:
//
//   slice zone (full) -- one wide-area link per pair of sites joined by an l2sts/switched network
//     site zone (full) -- VM to VM over the two NICs; the l2bridge switch hop's latency is split
//                         over the NIC directions (no switch link: it would couple all flows)
//       VM zone (full) -- the VM's NIC (split duplex) to the site, and per GPU its PCIe or
//                         NVLink path (split duplex); GPU-to-GPU inside a VM never touches the NIC
// (Full zones with explicit routes: star zones of 3.32 lost routes of hosts in nested zones.)
//
// Link parameters (latency, bandwidth) are not frozen in the platform: configure() sets them from
// a slice of the same shape (e.g. after override_wan_latency) and a calibration before each run.
// Per pair of GPUs it answers the route latency and the per-flow rate cap of window-limited link
// classes (tcp_window * streams_per_peer over the RTT, sim/tcp_window.hpp), so that long TCP paths
// limit a long flow and PCIe, NVLink or RDMA paths do not.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"

namespace simgrid::s4u {
class Host;
class Link;
class NetZone;
}  // namespace simgrid::s4u

namespace fabtrain {

class SimProcess;

// Built and owned by SimProcess::platform(slice), one per slice shape and process.
class SlicePlatform {
 public:
  // Sets every link's latency and bandwidth from the slice's catalog and networks, overridden by
  // the calibration. Throws fabtrain::Error when the slice's shape differs from the platform's.
  void configure(const Slice& slice, const Calibration& calibration);

  simgrid::s4u::Host* host(int gpu) const { return hosts_[gpu]; }
  int gpu_count() const { return int(hosts_.size()); }
  // One-way latency of the route between two GPUs (sum over its links), in seconds.
  double route_latency(int gpu_a, int gpu_b);
  // Maximum rate of one flow of `bytes` between two GPUs in bytes/s, or 0 when no window limits
  // it: a flow within one window goes at line rate, a long one tends to window / RTT.
  double rate_cap(int gpu_a, int gpu_b, double bytes);
  // Rate of one flow alone on the route: its slowest link, or the window cap when lower.
  double route_bandwidth(int gpu_a, int gpu_b);
  // Bytes in flight the route's window allows (all streams to the peer), 0 when none limits it;
  // and its slowest link's rate, bytes/s.
  double route_window(int gpu_a, int gpu_b) { return pair(gpu_a, gpu_b).window; }
  double route_line_rate(int gpu_a, int gpu_b) { return pair(gpu_a, gpu_b).line_rate; }
  // Seconds one flow of `bytes` alone on the route takes once its first byte leaves: at line
  // rate, each window beyond the first waiting a round trip (sim/tcp_window.hpp).
  double transfer_seconds(int gpu_a, int gpu_b, double bytes);

  // Whether two GPUs are in one VM (their route does not cross the network).
  bool same_vm(int gpu_a, int gpu_b) const { return gpu_vm_[gpu_a] == gpu_vm_[gpu_b]; }

  static std::string shape_key(const Slice& slice);

 private:
  struct PairInfo {
    double latency = 0;
    double window = 0;     // bytes in flight over all streams to the peer; 0: no window limit
    double line_rate = 0;  // slowest link of the route, bytes/s
    double bandwidth = 0;  // of a long flow: line rate or window / RTT, the lower
  };
  friend class SimProcess;
  friend class SlicePlatformBuilder;  // the constructor's parts (slice_platform.cpp)
  SlicePlatform(const Slice& slice, int id);
  const PairInfo& pair(int a, int b);

  struct ClassedLink {
    simgrid::s4u::Link* link = nullptr;
    std::string link_class;  // pcie, nvlink, l2bridge, l2sts, switched
    double line_rate = 0;    // bytes/s before efficiency; 0 = unlimited
    bool wide_area = false;  // latency from the site pair's round trip
    std::string site_a, site_b;
    int network = -1;  // index into Slice::networks for wide-area links
  };
  std::string key_;
  simgrid::s4u::NetZone* zone_ = nullptr;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<int> gpu_vm_;
  std::vector<ClassedLink> links_;
  Slice slice_;  // as of the last configure(), for window lookups
  Calibration calibration_;
  std::unordered_map<long long, PairInfo> pairs_;  // cleared by configure()
};

}  // namespace fabtrain
