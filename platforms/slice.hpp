// A slice: which VMs at which sites, with which GPUs and NICs, joined by which networks.
// Built-in slices live in platforms/data/slices/<name>.yaml; a path to a slice file works
// wherever a name does.
#pragma once
#include <string>
#include <vector>

#include "platforms/catalog.hpp"

namespace fabtrain {

struct Vm {
  std::string name;
  std::string site;
  std::string gpu;          // GpuType name
  int gpus = 1;
  std::string nic;          // NicType name
  std::string interconnect = "pcie";  // between the VM's GPUs: pcie or nvlink
};

// How VMs are joined: l2bridge (one site), l2sts (exactly two sites), or switched (any VMs,
// with the given latency and bandwidth).
struct Network {
  std::string name;
  std::string kind;                 // l2bridge | l2sts | switched
  std::vector<std::string> vms;     // member VMs (l2sts: VMs of both sites)
  std::vector<std::string> sites;   // l2sts: the two sites
  double rtt_s = -1;                // l2sts/switched: round trip; -1 = from the catalog
  double bandwidth = 0;             // bytes/s; 0 = limited by the NICs only
  double tcp_window_bytes = -1;     // -1 = from the link class
};

// One GPU of the slice, in slice order (VMs in file order, GPUs within a VM).
struct SliceGpu {
  int index = 0;
  int vm = 0;        // index into Slice::vms
  int local = 0;     // GPU index within the VM
  const GpuType* type = nullptr;
};

struct Slice {
  std::string name;
  std::string description;   // includes the assumptions the file states
  std::vector<std::string> assumptions;  // one line each, as the file lists them
  std::string path;          // the file it was loaded from
  std::vector<Vm> vms;
  std::vector<Network> networks;
  // The library that moves the bytes (the catalog's profile, with the slice's overrides).
  CommunicatorProfile communicator;
  const Catalog* catalog = nullptr;

  std::vector<SliceGpu> gpus() const;
  int gpu_count() const;
  std::vector<std::string> site_names() const;  // in order of first appearance
  // The network joining two different VMs; throws if none does.
  const Network& network_between(const std::string& vm_a, const std::string& vm_b) const;
  // One-way latency between two VMs' sites over their network (catalog or override).
  double one_way_latency_s(const std::string& vm_a, const std::string& vm_b) const;
};

// A built-in name or a path to a slice YAML file; validated against the catalog.
Slice load_slice(const std::string& name_or_path, const Catalog& catalog = builtin_catalog());
std::vector<std::string> builtin_slice_names();
// Every inter-site round-trip latency (l2sts and switched networks between sites) overridden,
// for what-if questions (--wan-latency-ms is a round trip, as FABRIC and the study quote them).
void override_wan_latency(Slice& slice, double rtt_s);
// Runs the slice with another of the catalog's communicator profiles (--communicator NAME).
void use_communicator(Slice& slice, const std::string& profile);

}  // namespace fabtrain
