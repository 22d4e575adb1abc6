#include "selector/advice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "common/limits.hpp"

namespace fabtrain {
namespace {

bool listed(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

// The GPU type of the site's free ones with the most compute (free count x FP32 peak).
std::string strongest_type(const SiteAvailability& site) {
  std::string best;
  double most = -1;
  for (const auto& [model, n] : site.free_gpus) {
    const double compute = n * builtin_catalog().gpu(model).peak_fp32_flops;
    if (compute > most) most = compute, best = model;
  }
  return best;
}

// A dedicated NIC where one is free (one per VM), else the shared NIC_Basic.
std::string nic_for(const SiteAvailability& site, const Testbed& testbed, int vm_index) {
  for (const auto& n : testbed.nics) {
    const auto it = site.free_nics.find(n.model);
    if (n.model != "NIC_Basic" && it != site.free_nics.end() && it->second > vm_index)
      return n.model;
  }
  return "NIC_Basic";
}

std::string vm_name(const std::string& site, int k) {
  std::string name = fmt::format("{}-gpu{}", site, k + 1);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return name;
}

// The networks joining the VMs: one FABNetv4, or an L2STS per pair of sites and an L2Bridge per
// site with several VMs.
std::vector<Network> networks_for(const std::vector<Vm>& vms, const std::string& kind) {
  std::vector<std::string> sites;
  for (const auto& vm : vms)
    if (!listed(sites, vm.site)) sites.push_back(vm.site);
  auto members = [&](const std::vector<std::string>& at) {
    std::vector<std::string> out;
    for (const auto& vm : vms)
      if (listed(at, vm.site)) out.push_back(vm.name);
    return out;
  };
  std::vector<Network> out;
  if (vms.size() < 2) return out;  // one VM: nothing to join
  if (kind == "fabnetv4") {
    Network n;
    n.name = n.kind = "fabnetv4";
    n.vms = members(sites);
    return {n};
  }
  for (std::size_t a = 0; a < sites.size(); ++a) {
    for (std::size_t b = a + 1; b < sites.size(); ++b) {
      Network n;
      n.name = fmt::format("l2sts-{}-{}", sites[a], sites[b]);
      n.kind = "l2sts";
      n.sites = {sites[a], sites[b]};
      n.vms = members(n.sites);
      out.push_back(n);
    }
    if (members({sites[a]}).size() > 1) {
      Network n;
      n.name = "l2bridge-" + sites[a];
      n.kind = "l2bridge";
      n.vms = members({sites[a]});
      out.push_back(n);
    }
  }
  return out;
}

}  // namespace

SliceDraft testbed_slice(const Availability& availability, const Testbed& testbed,
                         const AdviceOptions& o) {
  if (o.network != "fabnetv4" && o.network != "l2sts")
    fail("--network={} is not known (fabnetv4, or l2sts between two sites)", o.network);
  for (const auto& site : o.include)
    if (listed(o.avoid, site)) fail("--include and --avoid both name {}", site);
  SliceDraft d;
  d.name = "fabric-free";
  d.description = fmt::format("every GPU free on FABRIC per {}", availability.path);
  d.assumptions = {fmt::format("a GPU VM takes {} cores, {} GB RAM, {} GB disk (assumption)",
                               testbed.gpu_vm.cores, testbed.gpu_vm.ram_gb,
                               testbed.gpu_vm.disk_gb)};
  for (const auto& site : availability.sites) {
    if (listed(o.avoid, site.name)) continue;
    const std::string type = strongest_type(site);
    const TestbedGpu* gpu = nullptr;
    for (const auto& g : testbed.gpus)
      if (g.model == type) gpu = &g;
    const int per_vm =
        o.gpus_per_vm > 0 ? std::min(o.gpus_per_vm, gpu->max_per_vm) : gpu->max_per_vm;
    int left = site.free_gpus.at(type);
    for (int k = 0; left > 0 && k < site.gpu_vms; ++k) {
      Vm vm;
      vm.name = vm_name(site.name, k);
      vm.site = site.name;
      vm.gpu = type;
      vm.gpus = std::min(left, per_vm);
      vm.nic = nic_for(site, testbed, k);
      left -= vm.gpus;
      d.vms.push_back(vm);
    }
  }
  for (const auto& site : o.include)
    if (std::none_of(d.vms.begin(), d.vms.end(), [&](const Vm& vm) { return vm.site == site; }))
      fail("--include {}: the site has no free GPU VM in {}", site, availability.path);
  if (d.vms.empty()) fail("{}: no site is left once --avoid is applied", availability.path);
  int gpus = 0;
  for (const Vm& vm : d.vms) gpus += vm.gpus;
  if (gpus > limits::searched_gpus.max)
    fail(
        "{}: {} GPUs are free at the sites used; a search handles at most {} ({}): leave sites "
        "out with --avoid",
        availability.path, gpus, limits::searched_gpus.max, limits::searched_gpus.why);
  d.networks = networks_for(d.vms, o.network);
  return d;
}

bool within_caps(const GpuSubset& subset, const AdviceOptions& o) {
  if (o.max_gpus > 0 && int(subset.gpus.size()) > o.max_gpus) return false;
  const int most = o.network == "l2sts" ? 2 : 1 << 20;
  const auto& sites = subset.sites;
  if (int(sites.size()) > std::min(most, o.max_sites > 0 ? o.max_sites : 1 << 20)) return false;
  return std::all_of(o.include.begin(), o.include.end(), [&](const std::string& s) {
    return std::find(sites.begin(), sites.end(), s) != sites.end();
  });
}

SliceDraft slice_to_reserve(const Slice& testbed, const Evaluated& chosen, const AdviceOptions& o,
                            const std::string& name) {
  SliceDraft d;
  d.name = name;
  std::map<int, int> used;  // VM index -> GPUs the plan uses
  for (int g : chosen.candidate.subset.gpus) ++used[testbed.gpus()[g].vm];
  for (const auto& [vm, n] : used) {
    Vm copy = testbed.vms[vm];
    copy.gpus = n;
    d.vms.push_back(copy);
  }
  d.description =
      fmt::format("the slice `fabtrain advise` chose for {} ({})", to_string(chosen.candidate.plan),
                  technique_name(chosen.candidate.plan));
  d.assumptions = testbed.assumptions;
  d.networks = networks_for(d.vms, o.network);
  d.comment = "Chosen by `fabtrain advise`; reserve.py next to it reserves exactly these VMs.";
  return d;
}

std::string reserve_script(const SliceDraft& slice, const Testbed& testbed) {
  const std::string path = source_dir() + "/selector/data/reserve.py.template";
  std::ifstream in(path);
  if (!in) fail("cannot read the reserve script template '{}'", path);
  std::stringstream text;
  text << in.rdbuf();
  std::string out = text.str();
  std::string vms;
  int gpus = 0;
  for (const auto& vm : slice.vms) {
    vms += fmt::format("    (\"{}\", \"{}\", \"{}\", {}, \"{}\", {}, {}, {}),\n", vm.name, vm.site,
                       vm.gpu, vm.gpus, vm.nic, testbed.gpu_vm.cores, testbed.gpu_vm.ram_gb,
                       testbed.gpu_vm.disk_gb);
    gpus += vm.gpus;
  }
  const std::string kind = slice.networks.empty() ? "fabnetv4" : slice.networks.front().kind;
  auto replace = [&](const std::string& key, const std::string& value) {
    for (auto at = out.find(key); at != std::string::npos; at = out.find(key, at + value.size()))
      out.replace(at, key.size(), value);
  };
  replace("{{SLICE_NAME}}", slice.name);
  replace("{{SUMMARY}}", counted(slice.vms.size(), "VM") + ", " + counted(gpus, "GPU"));
  replace("{{NETWORK}}", kind);
  replace("{{VMS}}", vms.empty() ? "" : vms.substr(0, vms.size() - 1));
  return out;
}

}  // namespace fabtrain
