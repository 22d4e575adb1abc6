// fabtrain slices [--json]: the built-in slices (sites, GPU count and types).
// fabtrain slice show NAME|PATH [--json]: one slice in full: VMs, sites, GPUs, NICs, networks
// with their round trip and whether it was measured or estimated, and the stated assumptions.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {
namespace {

std::string joined(const std::vector<std::string>& list, const char* sep = ", ") {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : sep) + s;
  return out;
}

// "4 x GPU_RTX6000" or "2 x GPU_RTX6000 + 2 x GPU_TeslaT4", types in order of first appearance.
std::vector<std::pair<std::string, int>> gpu_mix(const Slice& s) {
  std::vector<std::pair<std::string, int>> mix;
  for (const auto& vm : s.vms) {
    auto it = std::find_if(mix.begin(), mix.end(), [&](auto& p) { return p.first == vm.gpu; });
    if (it == mix.end()) mix.push_back({vm.gpu, vm.gpus});
    else it->second += vm.gpus;
  }
  return mix;
}

std::string gpu_mix_text(const Slice& s) {
  std::vector<std::string> parts;
  for (const auto& [type, n] : gpu_mix(s)) parts.push_back(fmt::format("{} x {}", n, type));
  return joined(parts, " + ");
}

// The round trip a network's inter-site traffic sees, and where it comes from.
struct NetworkRtt {
  double rtt_s = 0;
  std::string origin;  // "measured", "estimated", "slice file / override", "intra-site"
  std::string source;
};

NetworkRtt network_rtt(const Slice& s, const Network& n) {
  if (n.rtt_s >= 0) return {n.rtt_s, "given", "set in the slice file or overridden"};
  if (n.sites.size() < 2) {
    const auto& cls = s.catalog->link_class(n.kind);
    return {2 * cls.latency_s, "intra-site", cls.source};
  }
  const SiteLatency l = s.catalog->latency(n.sites[0], n.sites[1]);
  return {l.rtt_s, l.measured ? "measured" : "estimated", l.source};
}

nlohmann::json slice_summary_json(const Slice& s) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& [type, n] : gpu_mix(s)) gpus.push_back({{"type", type}, {"count", n}});
  return {{"name", s.name}, {"sites", s.site_names()}, {"gpu_count", s.gpu_count()}, {"gpus", gpus}};
}

void list_slices(bool json) {
  std::vector<Slice> slices;
  for (const auto& name : builtin_slice_names()) slices.push_back(load_slice(name));
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : slices) out.push_back(slice_summary_json(s));
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{:<16} {:<14} {:>4}  {}\n", "slice", "sites", "gpus", "gpu types");
  for (const auto& s : slices)
    fmt::print("{:<16} {:<14} {:>4}  {}\n", s.name, joined(s.site_names(), "+"), s.gpu_count(),
               gpu_mix_text(s));
}

void show_slice(const std::string& name_or_path, bool json) {
  const Slice s = load_slice(name_or_path);
  const Catalog& cat = *s.catalog;
  if (json) {
    nlohmann::json out = slice_summary_json(s);
    out["path"] = s.path;
    out["description"] = s.description;
    out["assumptions"] = s.assumptions;
    for (const auto& vm : s.vms) {
      const GpuType& g = cat.gpu(vm.gpu);
      out["vms"].push_back({{"name", vm.name}, {"site", vm.site},
                            {"location", cat.site(vm.site).location}, {"gpu", vm.gpu},
                            {"gpu_description", g.description}, {"gpus", vm.gpus},
                            {"gpu_memory_bytes", g.memory_bytes}, {"nic", vm.nic},
                            {"nic_bandwidth_bytes_per_s", cat.nic(vm.nic).bandwidth},
                            {"interconnect", vm.interconnect}});
    }
    out["networks"] = nlohmann::json::array();
    for (const auto& n : s.networks) {
      const NetworkRtt rtt = network_rtt(s, n);
      out["networks"].push_back({{"name", n.name}, {"kind", n.kind}, {"vms", n.vms},
                                 {"sites", n.sites}, {"rtt_s", rtt.rtt_s},
                                 {"rtt_origin", rtt.origin}, {"measured", rtt.origin == "measured"},
                                 {"rtt_source", rtt.source}, {"bandwidth_bytes_per_s", n.bandwidth}});
    }
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("slice {} ({})\n", s.name, s.path);
  if (!s.description.empty()) fmt::print("  {}\n", s.description);
  fmt::print("sites: {}   GPUs: {} ({})\n\n", joined(s.site_names()), s.gpu_count(), gpu_mix_text(s));
  fmt::print("{:<12} {:<8} {:<16} {:>4} {:>8} {:<16} {:>9} {}\n", "vm", "site", "gpu", "n",
             "mem GiB", "nic", "nic Gb/s", "interconnect");
  for (const auto& vm : s.vms)
    fmt::print("{:<12} {:<8} {:<16} {:>4} {:>8.0f} {:<16} {:>9.0f} {}\n", vm.name, vm.site, vm.gpu,
               vm.gpus, cat.gpu(vm.gpu).memory_bytes / (1024.0 * 1024 * 1024), vm.nic,
               cat.nic(vm.nic).bandwidth * 8 / 1e9, vm.interconnect);
  if (!s.networks.empty()) {
    fmt::print("\n{:<18} {:<9} {:<12} {:>9}  {:<11} {}\n", "network", "kind", "sites", "rtt ms",
               "latency", "vms");
    for (const auto& n : s.networks) {
      const NetworkRtt rtt = network_rtt(s, n);
      fmt::print("{:<18} {:<9} {:<12} {:>9.3f}  {:<11} {}\n", n.name, n.kind, joined(n.sites, "-"),
                 rtt.rtt_s * 1e3, rtt.origin, joined(n.vms));
      fmt::print("{:<18} source: {}\n", "", rtt.source);
    }
  }
  if (!s.assumptions.empty()) {
    fmt::print("\nassumptions:\n");
    for (const auto& a : s.assumptions) fmt::print("  - {}\n", a);
  }
}

Registration list_reg(20, [](CLI::App& app) {
  auto* cmd = app.add_subcommand("slices", "List the built-in slices: sites, GPU count and types");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON instead of a table");
  cmd->callback([json] { list_slices(*json); });
});

struct ShowOptions {
  std::string slice;
  bool json = false;
};

Registration show_reg(21, [](CLI::App& app) {
  auto* cmd = app.add_subcommand("slice", "Inspect one slice");
  cmd->require_subcommand(1);
  auto* show = cmd->add_subcommand("show", "Show a slice's VMs, GPUs, NICs, networks and assumptions");
  auto opts = std::make_shared<ShowOptions>();
  show->add_option("slice", opts->slice, "Built-in slice name or path to a slice YAML file")->required();
  show->add_flag("--json", opts->json, "Print JSON instead of tables");
  show->callback([opts] { show_slice(opts->slice, opts->json); });
});

}  // namespace
}  // namespace fabtrain
