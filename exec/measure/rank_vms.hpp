// Which VM of a slice each rank of a job runs on, for the checks launched with one mpirun line
// over the slice (probe, preflight).
#pragma once
#include <string>
#include <vector>

#include "platforms/slice.hpp"

namespace fabtrain {

// The VM (index into slice.vms) of each rank, given every rank's host name: by host name where
// every rank's host is a VM's name (several ranks may share one); else, with one rank per VM, the
// order the slice file lists its VMs in; else empty (the ranks cannot be placed).
std::vector<int> ranks_to_vms(const Slice& slice, const std::vector<std::string>& hosts);

}  // namespace fabtrain
