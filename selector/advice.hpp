// From what FABRIC has free to the slice to reserve: the slice of everything usable (per site, its
// GPU type with the most free compute, in VMs of at most the testbed's GPUs per VM, a dedicated
// NIC where one is free, else NIC_Basic), the search's best plan on it under the user's caps, and
// the slice that plan uses, written as a slice file and as a fablib script that reserves it.
// Not here: reading availability (availability.hpp), the search (search.hpp).
#pragma once
#include <string>
#include <vector>

#include "platforms/slice_yaml.hpp"
#include "selector/availability.hpp"
#include "selector/search.hpp"

namespace fabtrain {

struct AdviceOptions {
  int max_gpus = 0;   // 0: no cap
  int max_sites = 0;  // 0: no cap
  std::vector<std::string> avoid, include;
  int gpus_per_vm = 0;               // 0: the testbed's most for each type
  std::string network = "fabnetv4";  // fabnetv4 | l2sts (two sites at most)
};

// Every usable site's free GPUs as one slice; throws when the caps leave nothing.
SliceDraft testbed_slice(const Availability& availability, const Testbed& testbed,
                         const AdviceOptions& options);

// Whether the plans on a GPU subset of the testbed slice keep the caps (GPUs, sites, sites they
// must include): a plan runs on all of its subset's GPUs, so they keep them or none does.
bool within_caps(const GpuSubset& subset, const AdviceOptions& options);

// The VMs and GPUs a plan on the testbed slice uses, as the slice to reserve.
SliceDraft slice_to_reserve(const Slice& testbed, const Evaluated& chosen,
                            const AdviceOptions& options, const std::string& name);

// The fablib script reserving the slice (selector/data/reserve.py.template filled in).
std::string reserve_script(const SliceDraft& slice, const Testbed& testbed);

}  // namespace fabtrain
