// FABRIC-like slices for the selector's benchmark and tests, drawn from a seed: N sites of the
// testbed (platforms/testbed.hpp), each with one GPU type of the four and 1-2 VMs of 1 to that
// type's most GPUs per VM, NIC_Basic or NIC_ConnectX_6 per VM, all VMs on one FABNetv4 network
// (round trips: the catalog's estimates), and, one slice in three, an L2STS network between two
// of the sites as well. The same seed gives the same slice.
#pragma once
#include <cstdint>

#include "platforms/slice_yaml.hpp"
#include "platforms/testbed.hpp"

namespace fabtrain {

// sites: 1 to the testbed's site count.
SliceDraft generate_fabric_slice(int sites, std::uint64_t seed, const Testbed& testbed);

}  // namespace fabtrain
