// Which network interface MPI and NCCL must use between a slice's VMs. A FABRIC VM has a
// management interface and one per data-plane network; Open MPI (btl_tcp_if_include,
// oob_tcp_if_include) and NCCL (NCCL_SOCKET_IFNAME) may otherwise pick the management one, and the
// run is then slow or fails and does not match the prediction. A network's own `subnet:` or
// `interface:` (slice file) wins; else FABRIC's defaults (platforms/data/data_plane.yaml): the
// routed networks' address blocks, and as the last resort "anything but loopback and the
// management interface".
#pragma once
#include <map>
#include <string>
#include <vector>

#include "platforms/slice.hpp"

namespace fabtrain {

struct DataPlaneDefaults {
  std::string management_interface;  // e.g. enp3s0
  std::string management_source;
  struct Subnet {
    std::string subnet, source;
  };
  std::map<std::string, Subnet> subnets;  // by network kind (fabnetv4, ...)
};
DataPlaneDefaults load_data_plane_defaults(const std::string& path);
const DataPlaneDefaults& builtin_data_plane_defaults();

// The interface selection for the networks between a set of VMs (names of the slice's VMs);
// nccl: whether NCCL carries the ranks' traffic (its notes matter then).
struct DataPlaneSelection {
  std::vector<const Network*> networks;  // the networks the VMs' traffic crosses, in slice order
  // For Open MPI: subnets or interface names to include; when empty, `exclude` instead.
  std::vector<std::string> mpi_include;
  std::vector<std::string> mpi_exclude;
  std::string nccl_socket_ifname;  // NCCL_SOCKET_IFNAME's value; "" when no network is crossed
  std::vector<std::string> notes;  // what was assumed, one line each, naming the network
};
DataPlaneSelection data_plane_for(
    const Slice& slice, const std::vector<std::string>& vms, bool nccl,
    const DataPlaneDefaults& defaults = builtin_data_plane_defaults());

// Checks a slice file's `subnet:` (IPv4 or IPv6 CIDR) and `interface:` (a Linux device name);
// `field` names the place in the file for the message.
void check_subnet(const std::string& field, const std::string& subnet);
void check_interface_name(const std::string& field, const std::string& name);

}  // namespace fabtrain
