// Building a slice's zones, hosts, links and routes, and setting link parameters between runs.
#include "sim/slice_platform.hpp"

#include <algorithm>
#include <map>
#include <simgrid/s4u.hpp>

#include "common/error.hpp"
#include "sim/sim_process.hpp"
#include "sim/tcp_window.hpp"

namespace fabtrain {

namespace sg4 = simgrid::s4u;

namespace {

constexpr double unlimited_bandwidth = 1e15;  // bytes/s: "limited elsewhere on the path"
using Dir = simgrid::s4u::LinkInRoute::Direction;

const LinkClass* find_class(const Catalog& catalog, const std::string& name) {
  const auto it = catalog.link_classes.find(name);
  return it == catalog.link_classes.end() ? nullptr : &it->second;
}

const LinkCalibration* find_calibration(const Calibration& cal, const std::string& name) {
  const auto it = cal.links.find(name);
  return it == cal.links.end() ? nullptr : &it->second;
}

std::vector<std::string> sites_of(const Slice& slice, const Network& network) {
  std::vector<std::string> sites;
  for (const auto& vm_name : network.vms)
    for (const auto& vm : slice.vms)
      if (vm.name == vm_name && std::find(sites.begin(), sites.end(), vm.site) == sites.end())
        sites.push_back(vm.site);
  return sites;
}

}  // namespace

std::string SlicePlatform::shape_key(const Slice& slice) {
  std::string key = slice.name + "|";
  for (const auto& vm : slice.vms)
    key += vm.name + "@" + vm.site + ":" + vm.gpu + "x" + std::to_string(vm.gpus) + ":" + vm.nic +
           ":" + vm.interconnect + ":" + vm.host + ";";
  key += "|";
  for (const auto& n : slice.networks) {
    key += n.name + "=" + n.kind + "(";
    for (const auto& vm : n.vms) key += vm + ",";
    key += ");";
  }
  return key;
}

// Builds a slice's zones, hosts, links and routes into a SlicePlatform (its constructor's work):
// site by site, each VM's zone with its GPUs inside, then the wide-area links between sites.
class SlicePlatformBuilder {
 public:
  SlicePlatformBuilder(SlicePlatform& platform, const Slice& slice, const std::string& prefix,
                       sg4::NetZone* slice_zone)
      : p_(platform), slice_(slice), prefix_(prefix), slice_zone_(slice_zone) {}

  void build() {
    for (const auto& site : slice_.site_names()) sites_[site] = build_site(site);
    build_wide_area();
    slice_zone_->seal();
  }

 private:
  using NetPoint = simgrid::kernel::routing::NetPoint;
  struct Member {
    NetPoint* zone;
    NetPoint* gateway;
    sg4::SplitDuplexLink* nic;
  };
  using HostPorts = std::map<std::string, sg4::SplitDuplexLink*>;  // host|nic -> its shared port

  std::pair<sg4::NetZone*, NetPoint*> build_site(const std::string& site) {
    auto* site_zone = sg4::create_full_zone(prefix_ + "/" + site);
    site_zone->set_parent(slice_zone_);
    // The site's gateway sits in a zone of its own: full zones route zone to zone only.
    auto* gw_zone = sg4::create_full_zone(prefix_ + "/" + site + "/gw");
    gw_zone->set_parent(site_zone);
    auto* site_gw = gw_zone->create_router(prefix_ + "/" + site + "/gw/router");
    gw_zone->seal();
    // No switch link: an unlimited shared link would still couple every flow of the site into
    // one sharing problem (quadratic at 1,000 GPUs). The switch's per-hop latency sits on the
    // NICs instead, half on each direction, so VM-to-VM crosses it exactly once.
    std::vector<Member> members;
    HostPorts host_ports;
    for (int v = 0; v < int(slice_.vms.size()); ++v)
      if (slice_.vms[v].site == site) members.push_back(build_vm(v, site_zone, host_ports));
    for (size_t i = 0; i < members.size(); ++i) {
      site_zone->add_route(members[i].zone, gw_zone->get_netpoint(), members[i].gateway, site_gw,
                           {sg4::LinkInRoute(members[i].nic, Dir::UP)}, true);
      for (size_t j = i + 1; j < members.size(); ++j)
        site_zone->add_route(members[i].zone, members[j].zone, members[i].gateway,
                             members[j].gateway,
                             {sg4::LinkInRoute(members[i].nic, Dir::UP),
                              sg4::LinkInRoute(members[j].nic, Dir::DOWN)},
                             true);
    }
    site_zone->seal();
    return {site_zone, site_gw};
  }

  Member build_vm(int v, sg4::NetZone* site_zone, HostPorts& host_ports) {
    const Vm& vm = slice_.vms[v];
    if (vm.gpus < 1)
      fail("slice '{}': VM '{}' has gpus={} (must be at least 1)", slice_.name, vm.name, vm.gpus);
    const GpuType& type = slice_.catalog->gpu(vm.gpu);
    const NicType& nic_type = slice_.catalog->nic(vm.nic);
    auto* vm_zone = sg4::create_full_zone(prefix_ + "/" + vm.name);
    vm_zone->set_parent(site_zone);
    auto* vm_gw = vm_zone->create_router(prefix_ + "/" + vm.name + "/gw");
    sg4::SplitDuplexLink* nic = vm_nic(vm, nic_type, site_zone, host_ports);
    const bool nvlink = vm.interconnect == "nvlink";
    if (!nvlink && vm.interconnect != "pcie" && vm.interconnect != "pcie-host")
      fail("slice '{}': VM '{}' interconnect '{}' (expected pcie, pcie-host or nvlink)",
           slice_.name, vm.name, vm.interconnect);
    // pcie-host: the GPUs reach each other through host memory over their PCIe links, at the
    // catalog's pcie-host class efficiency, which must then exist.
    if (vm.interconnect == "pcie-host" && !slice_.catalog->link_classes.count("pcie-host"))
      fail("slice '{}': VM '{}' interconnect pcie-host needs the catalog's link class pcie-host",
           slice_.name, vm.name);
    // A CPU device has no PCIe hop to its NIC: its data moves through host memory.
    const double path_rate = type.is_cpu ? type.memory_bandwidth
                             : nvlink    ? type.nvlink_bandwidth
                                         : type.pcie_bandwidth;
    if (!(path_rate > 0))
      fail("catalog: GPU type {} has no {} bandwidth (needed by VM '{}' of slice '{}')", type.name,
           vm.interconnect, vm.name, slice_.name);
    std::vector<std::pair<sg4::Host*, sg4::SplitDuplexLink*>> vm_hosts;
    for (int local = 0; local < vm.gpus; ++local, ++gpu_) {
      const std::string name = prefix_ + "/gpu" + std::to_string(gpu_);
      auto* host = vm_zone->create_host(name, 1e12);
      auto* path = vm_zone->create_split_duplex_link(name + "/" + vm.interconnect, path_rate);
      path->seal();
      p_.links_.push_back(
          {path->get_link_up(), vm.interconnect, path_rate, false, vm.site, vm.site, -1});
      p_.links_.push_back(
          {path->get_link_down(), vm.interconnect, path_rate, false, vm.site, vm.site, -1});
      vm_hosts.emplace_back(host, path);
      p_.hosts_.push_back(host);
      p_.gpu_vm_.push_back(v);
    }
    // Full routes inside the VM: GPU to GPU over both paths, GPU to the gateway over its path
    // (UP = egress). The NIC is on the site level's routes.
    for (size_t i = 0; i < vm_hosts.size(); ++i) {
      vm_zone->add_route(vm_hosts[i].first->get_netpoint(), vm_gw, nullptr, nullptr,
                         {sg4::LinkInRoute(vm_hosts[i].second, Dir::UP)}, true);
      for (size_t j = i + 1; j < vm_hosts.size(); ++j)
        vm_zone->add_route(vm_hosts[i].first->get_netpoint(), vm_hosts[j].first->get_netpoint(),
                           nullptr, nullptr,
                           {sg4::LinkInRoute(vm_hosts[i].second, Dir::UP),
                            sg4::LinkInRoute(vm_hosts[j].second, Dir::DOWN)},
                           true);
    }
    vm_zone->seal();
    return {vm_zone->get_netpoint(), vm_gw, nic};
  }

  // VMs on one physical host (fablib's instance_parent) with a shared NIC (NIC_Basic: SR-IOV
  // functions of one ConnectX-6 port) share that port: one NIC link for all of them.
  sg4::SplitDuplexLink* vm_nic(const Vm& vm, const NicType& nic_type, sg4::NetZone* site_zone,
                               HostPorts& host_ports) {
    const std::string port_key = vm.host + "|" + vm.nic;
    const bool shared_port = !vm.host.empty() && vm.nic == "NIC_Basic";
    if (shared_port && host_ports.count(port_key)) return host_ports[port_key];
    auto* nic =
        site_zone->create_split_duplex_link(prefix_ + "/" + vm.name + "/nic", nic_type.bandwidth);
    nic->seal();
    p_.links_.push_back(
        {nic->get_link_up(), "l2bridge", nic_type.bandwidth, false, vm.site, vm.site, -1});
    p_.links_.push_back(
        {nic->get_link_down(), "l2bridge", nic_type.bandwidth, false, vm.site, vm.site, -1});
    if (shared_port) host_ports[port_key] = nic;
    return nic;
  }

  // One wide-area link per pair of sites joined by a network (the first network that joins them).
  void build_wide_area() {
    std::map<std::pair<std::string, std::string>, bool> joined;
    for (int n = 0; n < int(slice_.networks.size()); ++n) {
      const Network& network = slice_.networks[n];
      const auto net_sites = sites_of(slice_, network);
      for (size_t i = 0; i < net_sites.size(); ++i)
        for (size_t j = i + 1; j < net_sites.size(); ++j) {
          auto a = net_sites[i], b = net_sites[j];
          if (a > b) std::swap(a, b);
          if (joined[{a, b}]) continue;
          joined[{a, b}] = true;
          auto* wan = slice_zone_->create_split_duplex_link(
              prefix_ + "/" + network.name + "/" + a + "-" + b, unlimited_bandwidth);
          wan->seal();
          p_.links_.push_back({wan->get_link_up(), network.kind, network.bandwidth, true, a, b, n});
          p_.links_.push_back(
              {wan->get_link_down(), network.kind, network.bandwidth, true, a, b, n});
          slice_zone_->add_route(sites_[a].first->get_netpoint(), sites_[b].first->get_netpoint(),
                                 sites_[a].second, sites_[b].second,
                                 {sg4::LinkInRoute(wan, sg4::LinkInRoute::Direction::UP)}, true);
        }
    }
  }

  SlicePlatform& p_;
  const Slice& slice_;
  const std::string prefix_;
  sg4::NetZone* slice_zone_;
  int gpu_ = 0;  // GPUs so far, over all sites
  std::map<std::string, std::pair<sg4::NetZone*, NetPoint*>> sites_;
};

SlicePlatform::SlicePlatform(const Slice& slice, int id) : key_(shape_key(slice)) {
  if (!slice.catalog) fail("slice '{}' has no catalog", slice.name);
  if (slice.vms.empty()) fail("slice '{}' has no VMs", slice.name);
  if (SimProcess::get().started())
    fail(
        "slice '{}': SimGrid 3.32 seals the platform at the first simulation, so every slice a "
        "process simulates must be loaded (a Simulator constructed) before the first run; "
        "construct all Simulators first, or use one process per slice",
        slice.name);
  const std::string prefix = slice.name + "#" + std::to_string(id);
  auto* root = SimProcess::get().root_zone();  // creates the Engine first: zones need it
  zone_ = sg4::create_full_zone(prefix);
  zone_->set_parent(root);
  SlicePlatformBuilder(*this, slice, prefix, zone_).build();
  configure(slice, Calibration{});
}

void SlicePlatform::configure(const Slice& slice, const Calibration& calibration) {
  if (shape_key(slice) != key_)
    fail("slice '{}' does not have the shape of the platform it was given to", slice.name);
  const Catalog& catalog = *slice.catalog;
  for (auto& l : links_) {
    const LinkClass* cls = find_class(catalog, l.link_class);
    const LinkCalibration* cal = find_calibration(calibration, l.link_class);
    double latency = cls ? cls->latency_s : 0;
    if (cal && cal->latency_s) latency = *cal->latency_s;
    if (l.wide_area) {
      latency += slice.site_rtt(slice.networks[l.network], l.site_a, l.site_b).value / 2;
    } else if (l.link_class == "l2bridge") {
      latency /= 2;  // NICs: half the switch hop on egress, half on ingress
    }
    // Wide-area links take the network's or the measured link's bandwidth as the slice states it
    // now (what-ifs).
    const double rate =
        l.wide_area ? slice.site_bandwidth(slice.networks[l.network], l.site_a, l.site_b).value
                    : l.line_rate;
    double bandwidth = rate > 0 ? rate * (cls ? cls->efficiency : 1.0) : unlimited_bandwidth;
    if (cal && cal->bandwidth && (l.line_rate > 0 || l.wide_area)) bandwidth = *cal->bandwidth;
    l.link->set_latency(latency);
    l.link->set_bandwidth(bandwidth);
  }
  slice_ = slice;
  calibration_ = calibration;
  pairs_.clear();
}

const SlicePlatform::PairInfo& SlicePlatform::pair(int a, int b) {
  const long long key = (long long)a * (long long)hosts_.size() + b;
  const auto it = pairs_.find(key);
  if (it != pairs_.end()) return it->second;
  PairInfo info;
  if (a != b) {
    // network_between throws a clear error when no network joins the two VMs, before SimGrid
    // would be asked for a route that does not exist.
    const Network* network = nullptr;
    if (gpu_vm_[a] != gpu_vm_[b])
      network = &slice_.network_between(slice_.vms[gpu_vm_[a]].name, slice_.vms[gpu_vm_[b]].name);
    std::vector<sg4::Link*> route;
    try {
      hosts_[a]->route_to(hosts_[b], route, &info.latency);
    } catch (const std::exception& e) {
      fail("slice '{}': SimGrid has no route from {} to {}: {}", slice_.name, hosts_[a]->get_name(),
           hosts_[b]->get_name(), e.what());
    }
    if (network) {
      const LinkClass* cls = find_class(*slice_.catalog, network->kind);
      const LinkCalibration* cal = find_calibration(calibration_, network->kind);
      double window = network->tcp_window_bytes >= 0 ? network->tcp_window_bytes
                                                     : (cls ? cls->tcp_window_bytes : 0);
      if (cal && cal->tcp_window_bytes) window = *cal->tcp_window_bytes;
      // The communicator's streams to the peer, each bounded by the TCP window and by the
      // library's own buffer (NCCL_BUFFSIZE), whichever is smaller.
      const CommunicatorProfile& comm = slice_.communicator;
      if (comm.max_in_flight_bytes > 0)
        window = window > 0 ? std::min(window, comm.max_in_flight_bytes) : comm.max_in_flight_bytes;
      if (window > 0 && info.latency > 0) info.window = window * std::max(1, comm.streams_per_peer);
    }
    info.line_rate = unlimited_bandwidth;
    for (const auto* link : route) info.line_rate = std::min(info.line_rate, link->get_bandwidth());
    info.bandwidth = info.line_rate;
    if (info.window > 0)
      info.bandwidth = std::min(info.bandwidth, info.window / (2 * info.latency));
  }
  return pairs_.emplace(key, info).first->second;
}

double SlicePlatform::route_latency(int a, int b) { return pair(a, b).latency; }
double SlicePlatform::rate_cap(int a, int b, double bytes) {
  const PairInfo& p = pair(a, b);
  return window_rate_cap(bytes, p.window, 2 * p.latency, p.line_rate);
}
double SlicePlatform::route_bandwidth(int a, int b) { return pair(a, b).bandwidth; }
double SlicePlatform::transfer_seconds(int a, int b, double bytes) {
  const PairInfo& p = pair(a, b);
  return window_limited_seconds(bytes, p.window, 2 * p.latency, p.line_rate);
}

}  // namespace fabtrain
