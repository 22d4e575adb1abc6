// What FABRIC has free, per site, as fablib prints it (`fablib.list_sites(output='json')` or
// `fabric-cli resources sites --json`: an array of sites with `name`, `state` and, per resource X,
// `X_available`, `X_capacity`, `X_allocated`), or a plain YAML of site -> {GPU: free count}.
// Sites that cannot host a GPU VM (not Active, too few cores, RAM, disk or NICs, no free GPU of a
// known type, a site the catalog does not place) are left out with the reason; resources of
// unknown kinds are listed and left out, not fatal.
// Not here: which of it to reserve (advice.hpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "platforms/testbed.hpp"

namespace fabtrain {

struct SiteAvailability {
  std::string name;
  std::map<std::string, int> free_gpus;  // by GPU model (GPU_RTX6000), known types only
  std::map<std::string, int> free_nics;  // by NIC model; empty in a plain YAML (not limited)
  int gpu_vms = 0;  // GPU VMs its free cores, RAM and disk allow (a large number when not given)
};

struct Availability {
  std::string path;
  std::vector<SiteAvailability> sites;  // usable, in file order
  std::vector<std::string> left_out;    // "MAX: state is Maint (not Active)"
  std::vector<std::string> unknown;     // "UTAH: h100_available (unknown resource, left out)"
};

// Throws fabtrain::Error naming the file, the site and the key: not fablib's format, a negative
// or non-numeric count, or no site left that can host a GPU VM.
Availability read_availability(const std::string& path, const Testbed& testbed);

}  // namespace fabtrain
