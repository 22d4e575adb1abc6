// What a loaded Slice answers: its GPUs in order, its sites, the network between two VMs and
// the latency over it, and the what-if override of every inter-site round trip.
// Loading and validating a slice file is slice_loader.cpp.
#include "platforms/slice.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/limits.hpp"

namespace fabtrain {
namespace {

const Vm& vm_named(const Slice& s, const std::string& name) {
  for (const auto& vm : s.vms)
    if (vm.name == name) return vm;
  std::string known;
  for (const auto& vm : s.vms) known += (known.empty() ? "" : ", ") + vm.name;
  fail("slice {}: no VM named '{}' (VMs: {})", s.name, name, known);
}

bool contains(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

// The sites a network's VMs sit at, in order of first appearance.
std::vector<std::string> network_sites(const Slice& s, const Network& n) {
  std::vector<std::string> sites;
  for (const auto& name : n.vms) {
    const std::string& site = vm_named(s, name).site;
    if (!contains(sites, site)) sites.push_back(site);
  }
  return sites;
}

}  // namespace

std::vector<SliceGpu> Slice::gpus() const {
  std::vector<SliceGpu> out;
  for (int v = 0; v < int(vms.size()); ++v) {
    const GpuType* type = catalog ? &catalog->gpu(vms[v].gpu) : nullptr;
    for (int local = 0; local < vms[v].gpus; ++local)
      out.push_back({int(out.size()), v, local, type});
  }
  return out;
}

int Slice::gpu_count() const {
  int n = 0;
  for (const auto& vm : vms) n += vm.gpus;
  return n;
}

std::vector<std::string> Slice::site_names() const {
  std::vector<std::string> out;
  for (const auto& vm : vms)
    if (!contains(out, vm.site)) out.push_back(vm.site);
  return out;
}

const Network& Slice::network_between(const std::string& vm_a, const std::string& vm_b) const {
  vm_named(*this, vm_a);
  vm_named(*this, vm_b);
  if (vm_a == vm_b)
    fail("slice {}: '{}' and '{}' are the same VM; no network joins a VM to itself", name, vm_a,
         vm_b);
  for (const auto& n : networks)
    if (contains(n.vms, vm_a) && contains(n.vms, vm_b)) return n;
  fail("slice {}: no network joins VMs '{}' and '{}'", name, vm_a, vm_b);
}

double Slice::one_way_latency_s(const std::string& vm_a, const std::string& vm_b) const {
  const Network& net = network_between(vm_a, vm_b);
  if (!catalog) fail("slice {}: has no catalog to take latencies from", name);
  const std::string& site_a = vm_named(*this, vm_a).site;
  const std::string& site_b = vm_named(*this, vm_b).site;
  // A round trip set on the network (file or override) is its whole wide-area part; a switched
  // network's given latency holds even inside one site.
  double rtt = 0;
  if (net.rtt_s >= 0 && net.kind == "switched")
    rtt = net.rtt_s;
  else if (site_a != site_b)
    rtt = site_rtt(net, site_a, site_b).value;
  return catalog->link_class(net.kind).latency_s + rtt / 2;
}

const SiteLink* Slice::link_between(const std::string& site_a, const std::string& site_b) const {
  for (const auto& l : links)
    if ((l.a == site_a && l.b == site_b) || (l.a == site_b && l.b == site_a)) return &l;
  return nullptr;
}

PairValue Slice::site_rtt(const Network& net, const std::string& site_a,
                          const std::string& site_b) const {
  if (!catalog) fail("slice {}: has no catalog to take latencies from", name);
  if (site_a == site_b) {
    const auto& cls = catalog->link_class(net.kind);
    return {2 * cls.latency_s, "intra-site", cls.source};
  }
  if (net.rtt_s >= 0)
    return {net.rtt_s, "given", fmt::format("network {} (slice file or override)", net.name)};
  if (const SiteLink* l = link_between(site_a, site_b)) return {l->rtt_s, "measured", l->source};
  const SiteLatency l = catalog->latency(site_a, site_b);
  return {l.rtt_s, l.measured ? "measured" : "estimated", l.source};
}

PairValue Slice::site_bandwidth(const Network& net, const std::string& site_a,
                                const std::string& site_b) const {
  if (net.bandwidth > 0)
    return {net.bandwidth, "given", fmt::format("network {} (slice file)", net.name)};
  if (site_a != site_b)
    if (const SiteLink* l = link_between(site_a, site_b); l && l->bandwidth > 0)
      return {l->bandwidth, "measured", l->source};
  return {0, "nic", "not measured: limited by the NICs only"};
}

bool is_two_site_kind(const std::string& kind) { return kind == "l2sts" || kind == "l2ptp"; }

std::vector<std::string> network_kinds() {
  return {"l2bridge", "l2sts", "l2ptp", "fabnetv4", "fabnetv6", "switched"};
}

void override_wan_latency(Slice& slice, double rtt_s) {
  if (!(rtt_s >= 0)) fail("wide-area round trip {} s must be zero or positive", rtt_s);
  if (rtt_s * 1e3 > limits::rtt_ms_max)
    fail(
        "wide-area round trip {} ms; fabtrain handles at most {} ms (the longest paths on Earth "
        "take 600 ms)",
        rtt_s * 1e3, limits::rtt_ms_max);
  for (auto& n : slice.networks)
    if (network_sites(slice, n).size() > 1) n.rtt_s = rtt_s;
}

namespace {
SiteLink& link_for(Slice& slice, const std::string& a, const std::string& b) {
  for (auto& l : slice.links)
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return l;
  slice.links.push_back({});
  SiteLink& l = slice.links.back();
  l.a = a, l.b = b;
  return l;
}
}  // namespace

void override_pair_latency(Slice& slice, const std::string& site_a, const std::string& site_b,
                           double rtt_s) {
  if (!(rtt_s >= 0) || rtt_s * 1e3 > limits::rtt_ms_max)
    fail("round trip {} ms between {} and {} must be between 0 and {} ms", rtt_s * 1e3, site_a,
         site_b, limits::rtt_ms_max);
  for (auto& n : slice.networks) {
    const auto sites = network_sites(slice, n);
    if (!contains(sites, site_a) || !contains(sites, site_b)) continue;
    if (sites.size() == 2) {
      n.rtt_s = rtt_s;
      continue;
    }
    if (n.rtt_s >= 0) {  // the network's one round trip becomes its other pairs' links
      for (size_t i = 0; i < sites.size(); ++i)
        for (size_t j = i + 1; j < sites.size(); ++j) {
          SiteLink& l = link_for(slice, sites[i], sites[j]);
          l.rtt_s = n.rtt_s;
          l.source = fmt::format("network {}'s round trip", n.name);
        }
      n.rtt_s = -1;
    }
    SiteLink& l = link_for(slice, site_a, site_b);
    l.rtt_s = rtt_s;
    l.source = "what-if override";
  }
}

double pair_rtt_s(const Slice& slice, const std::string& site_a, const std::string& site_b) {
  const Vm* a = nullptr;
  const Vm* b = nullptr;
  for (const auto& vm : slice.vms) {
    if (!a && vm.site == site_a) a = &vm;
    if (!b && vm.site == site_b) b = &vm;
  }
  if (!a || !b) fail("slice {}: no VM at {} or {}", slice.name, site_a, site_b);
  return slice.site_rtt(slice.network_between(a->name, b->name), site_a, site_b).value;
}

void use_communicator(Slice& slice, const std::string& profile) {
  if (!slice.catalog)
    fail("slice {}: has no catalog to take communicator profiles from", slice.name);
  slice.communicator = slice.catalog->communicator(profile);
}

}  // namespace fabtrain
