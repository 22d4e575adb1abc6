// `fabtrain slice import`: a slice as fablib's slice.save() wrote it (FIM GraphML or node-link
// JSON) turned into fabtrain's slice: VMs (NetworkNode Type=VM) with their Site, GPU components
// (RTX6000, Tesla T4, A30, A40) and NIC (SharedNIC, SmartNIC ConnectX-5/6/7, BlueField-2), the
// physical host of an instantiated VM (LabelAllocations.instance_parent), and the networks
// (L2Bridge, L2STS, L2PTP, FABNetv4, FABNetv6) found through their ConnectionPoint and Link
// vertices. Once instantiated, fablib keeps the data plane there too: each VM's address
// (the interface's UserData fablib_data.addr), its device (.dev) and a network's subnet (FIM's
// Gateway, or fablib_data.subnet of an L2 network); the launch line selects the interface by
// them. VMs without a GPU are listed and left out. The saved file holds no latency or
// bandwidth: those come from the catalog (estimated) until `fabtrain-exec probe` measures them.
#pragma once
#include <string>
#include <vector>

#include "platforms/catalog.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {

struct ImportedVm {
  Vm vm;
  std::string capacities;  // "16 cores, 64 GB RAM, 100 GB disk" from Capacities, "" if none
};

struct ImportedSlice {
  std::string name;    // the file's stem
  std::string path;    // the saved file
  std::string format;  // GraphML or node-link JSON
  std::vector<ImportedVm> vms;
  std::vector<Network> networks;
  std::vector<std::string> left_out;     // one line each: what was not imported and why
  std::vector<std::string> assumptions;  // what the import assumed
};

// Throws fabtrain::Error naming the file, the vertex and the rule: not a fablib slice, a VM with
// no site, an unknown site, GPU or NIC model (with the known ones), two GPU types in one VM.
ImportedSlice import_fablib_slice(const std::string& path, const Catalog& catalog);

// The slice file text (YAML) of an imported slice, readable by load_slice().
std::string to_slice_yaml(const ImportedSlice& slice);

}  // namespace fabtrain
