// A slice: which VMs at which sites, with which GPUs and NICs, joined by which networks.
// Built-in slices live in platforms/data/slices/<name>.yaml; a path to a slice file works
// wherever a name does.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "platforms/catalog.hpp"

namespace fabtrain {

struct Vm {
  std::string name;
  std::string site;
  std::string gpu;  // GpuType name
  int gpus = 1;
  std::string nic;                    // NicType name
  std::string interconnect = "pcie";  // between the VM's GPUs: pcie, pcie-host or nvlink
  std::string host = {};     // physical host (fablib's instance_parent); "" = unknown. VMs of one
                             // host with NIC_Basic share its NIC port (sim/slice_platform.hpp)
  std::string address = {};  // how the ranks reach it (data-plane address or name); "" = name
};

// How VMs are joined: l2bridge (one site), l2sts or l2ptp (exactly two sites), fabnetv4 or
// fabnetv6 (FABRIC's routed networks, any number of sites), or switched (any VMs, with the given
// latency and bandwidth).
struct Network {
  std::string name;
  std::string kind;                // l2bridge | l2sts | l2ptp | fabnetv4 | fabnetv6 | switched
  std::vector<std::string> vms;    // member VMs
  std::vector<std::string> sites;  // the sites of its VMs (l2sts/l2ptp: the two sites)
  double rtt_s = -1;               // l2sts/switched: round trip; -1 = from the catalog
  double bandwidth = 0;            // bytes/s; 0 = limited by the NICs only
  double tcp_window_bytes = -1;    // -1 = from the link class
  // The VMs' addresses on it (CIDR) and their interface's name there; "" = not given
  // (platforms/data_plane.hpp says what the launch line assumes then).
  std::string subnet;
  std::string interface;
};

// A measured link between two sites of the slice (what `fabtrain-exec probe` writes): it gives
// the round trip and bandwidth of every network between the pair unless the network sets its own.
struct SiteLink {
  std::string a, b;
  double rtt_s = 0;                 // median round trip
  double rtt_p90_s = -1;            // -1 = not given
  double bandwidth = 0;             // bytes/s with `streams` TCP streams; 0 = not measured
  double bandwidth_one_stream = 0;  // bytes/s with one stream; 0 = not measured
  int streams = 0;                  // streams behind `bandwidth`; 0 = not given
  std::string source;               // who measured it, when, how
};

// The round trip or bandwidth between two sites over a network, and where it comes from.
struct PairValue {
  double value = 0;
  std::string origin;  // "given" (network / override), "measured", "estimated", "intra-site", "nic"
  std::string source;
};

// One GPU of the slice, in slice order (VMs in canonical order, GPUs within a VM).
struct SliceGpu {
  int index = 0;
  int vm = 0;     // index into Slice::vms
  int local = 0;  // GPU index within the VM
  const GpuType* type = nullptr;
};

struct Slice {
  std::string name;
  std::string description;                 // includes the assumptions the file states
  std::vector<std::string> assumptions;    // one line each, as the file lists them
  std::string path;                        // the file it was loaded from
  std::vector<Vm> vms;                     // in canonical order (put_vms_in_canonical_order)
  std::vector<std::string> vm_file_order;  // the VMs' names as the file lists them
  std::vector<Network> networks;
  // The library that moves the bytes (the catalog's profile, with the slice's overrides).
  CommunicatorProfile communicator;
  std::vector<SiteLink> links;
  const Catalog* catalog = nullptr;
  std::shared_ptr<const Catalog> own_catalog;  // the slice's `catalog:` section over the base

  std::vector<SliceGpu> gpus() const;
  int gpu_count() const;
  std::vector<std::string> site_names() const;  // in order of first appearance
  // The network joining two different VMs; throws if none does.
  const Network& network_between(const std::string& vm_a, const std::string& vm_b) const;
  // One-way latency between two VMs' sites over their network (catalog or override).
  double one_way_latency_s(const std::string& vm_a, const std::string& vm_b) const;
  // The measured link between two sites, or null.
  const SiteLink* link_between(const std::string& site_a, const std::string& site_b) const;
  // Round trip between two different sites over a network: the network's own (file or
  // override), else the measured link, else the catalog (measured or estimated).
  PairValue site_rtt(const Network& network, const std::string& site_a,
                     const std::string& site_b) const;
  // Wide-area bandwidth between two sites (bytes/s): the network's own, else the measured link,
  // else 0 (limited by the NICs only).
  PairValue site_bandwidth(const Network& network, const std::string& site_a,
                           const std::string& site_b) const;
};

// True for the kinds that join exactly two sites (l2sts, l2ptp).
bool is_two_site_kind(const std::string& kind);
// The network kinds a slice file may name, for messages: "l2bridge, l2sts, ...".
std::vector<std::string> network_kinds();

// The VMs in one order, so that listing them otherwise in a file gives the same answer: sites
// strongest first (their GPUs' FP32 peak together, then GPU count), within a site VMs strongest
// first (GPU peak, memory, count, NVLink, NIC), then by name. Sites of equal hardware keep the
// file's order (two of them are mirror images: the same times either way). GPU indices (a plan's
// devices=) count in this order.
void put_vms_in_canonical_order(Slice& slice);
// A built-in name or a path to a slice YAML file; validated against the catalog; VMs in the
// canonical order.
Slice load_slice(const std::string& name_or_path, const Catalog& catalog = builtin_catalog());
std::vector<std::string> builtin_slice_names();
// Every inter-site round-trip latency (l2sts and switched networks between sites) overridden,
// for what-if questions (--wan-latency-ms is a round trip, as FABRIC and the study quote them).
void override_wan_latency(Slice& slice, double rtt_s);
// Runs the slice with another of the catalog's communicator profiles (--communicator NAME).
void use_communicator(Slice& slice, const std::string& profile);
// One site pair's round trip overridden (what-if, as --wan-latency-ms for one pair): every other
// pair keeps its own; a network of more than two sites that gave one round trip for all its
// pairs keeps it for the others as links.
void override_pair_latency(Slice& slice, const std::string& site_a, const std::string& site_b,
                           double rtt_s);
// The round trip between two sites of the slice, over the network joining their first VMs.
double pair_rtt_s(const Slice& slice, const std::string& site_a, const std::string& site_b);

}  // namespace fabtrain
