#include "selector/availability.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/strict_number.hpp"
#include "common/yaml_tree.hpp"
#include "platforms/catalog.hpp"

namespace fabtrain {
namespace {

// Resources fablib reports that a GPU VM does not need: known, not GPUs, not listed as unknown.
const std::set<std::string> kOtherResources = {"cores",     "ram",         "disk",      "nvme",
                                               "fpga_u280", "fpga_sn1022", "p4-switch", "hosts",
                                               "cpus",      "storage",     "smartnic"};

int count_of(const std::string& path, const std::string& site, const std::string& key,
             const nlohmann::json& v) {
  if (!v.is_number()) fail("{}: site {}: {} must be a number, found {}", path, site, key, v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0 || x != std::floor(x) || x > 1e9)
    fail("{}: site {}: {} must be a whole number from 0, found {}", path, site, key, v.dump());
  return int(x);
}

std::string nic_of(const Testbed& t, const std::string& key) {
  for (const auto& n : t.nics)
    if (n.key == key) return n.model;
  return "";
}

SiteAvailability read_fablib_site(const std::string& path, const nlohmann::json& s,
                                  const Testbed& testbed, Availability& out, bool& usable) {
  if (!s.is_object() || !s.contains("name") || !s["name"].is_string())
    fail("{}: every site must be an object with a string 'name' (fablib list_sites output)", path);
  SiteAvailability site{s["name"].get<std::string>()};
  const std::string state = s.value("state", std::string("Active"));
  auto available = [&](const std::string& resource) {
    const std::string key = resource + "_available";
    return s.contains(key) ? count_of(path, site.name, key, s[key]) : -1;
  };
  for (const auto& [key, value] : s.items()) {
    const auto at = key.rfind("_available");
    if (at == std::string::npos || at + 10 != key.size()) continue;
    const std::string resource = key.substr(0, at);
    const int n = count_of(path, site.name, key, value);
    if (const TestbedGpu* g = testbed.gpu_by_key(resource)) {
      if (n > 0) site.free_gpus[g->model] = n;
    } else if (const std::string nic = nic_of(testbed, resource); !nic.empty()) {
      site.free_nics[nic] = n;
    } else if (!kOtherResources.count(resource) && n > 0) {
      out.unknown.push_back(fmt::format("{}: {} (unknown resource, left out)", site.name, key));
    }
  }
  const int cores = available("cores");
  const int ram = available("ram");
  const int disk = available("disk");
  const GpuVmNeeds& need = testbed.gpu_vm;
  auto vms_by = [](int have, double each) { return have < 0 ? 1 << 20 : int(have / each); };
  site.gpu_vms =
      std::min({vms_by(cores, need.cores), vms_by(ram, need.ram_gb), vms_by(disk, need.disk_gb)});
  int nics = 0;
  for (const auto& [m, n] : site.free_nics) nics += n;
  std::string why;
  if (state != "Active")
    why = fmt::format("state is {} (not Active)", state);
  else if (site.free_gpus.empty())
    why = "no free GPU of a known type";
  else if (site.gpu_vms == 0)
    why = fmt::format(
        "too few cores, RAM or disk for a GPU VM ({} cores, {} GB RAM, {} GB disk "
        "free; a GPU VM takes {}, {}, {})",
        cores, ram, disk, need.cores, need.ram_gb, need.disk_gb);
  else if (!site.free_nics.empty() && nics == 0)
    why = "no free NIC for the data-plane network";
  usable = why.empty();
  if (!usable) out.left_out.push_back(site.name + ": " + why);
  return site;
}

nlohmann::json parse_json(const std::string& path, const std::string& text) {
  int depth = 0, deepest = 0;
  for (char c : text) {  // a bound on nesting before the recursive parser sees it
    if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    if (c == ']' || c == '}') --depth;
  }
  if (deepest > 64) fail("{}: JSON nested {} deep; an availability file nests 3", path, deepest);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", path, e.what());
  }
}

// A free count of the plain YAML form: a whole number from 0 (no octal, no exponent tricks).
double whole_count(const std::string& path, const std::string& site, const std::string& key,
                   const YamlNode& count) {
  double n = -1;
  if (count.is_scalar()) {
    try {
      n = double(strict_integer(count.text(), key));
    } catch (const Error&) {
    }
  }
  if (n < 0 || n > 1e9)
    fail("{}: line {}: site {}: {} must be a whole number from 0, found {}", path, count.line(),
         site, key, count.is_scalar() ? "'" + count.text() + "'" : count.describe());
  return n;
}

void read_plain_yaml(const std::string& path, const std::string& text, const Testbed& testbed,
                     Availability& out) {
  const YamlNode root = parse_yaml(text, path, "availability");
  if (!root.is_mapping())
    fail(
        "{}: expected fablib's JSON array of sites, or a YAML mapping of site -> "
        "{{GPU: free count}}",
        path);
  for (const auto& [name, gpus] : root.entries()) {
    if (!gpus.is_mapping())
      fail("{}: site {}: expected a mapping of GPU -> free count", path, name);
    SiteAvailability site{name};
    site.gpu_vms = 1 << 20;  // not given: not limited
    for (const auto& [key, count] : gpus.entries()) {
      const double n = whole_count(path, name, key, count);
      const TestbedGpu* gpu = testbed.gpu_by_key(key);
      for (const auto& t : testbed.gpus)
        if (t.model == key) gpu = &t;
      if (!gpu)
        out.unknown.push_back(fmt::format("{}: {} (unknown GPU, left out)", name, key));
      else if (n > 0)
        site.free_gpus[gpu->model] += int(n);
    }
    if (site.free_gpus.empty())
      out.left_out.push_back(name + ": no free GPU of a known type");
    else if (!builtin_catalog().sites.count(name))
      out.left_out.push_back(name + ": not in the catalog (no round trip can be estimated)");
    else
      out.sites.push_back(site);
  }
}

}  // namespace

Availability read_availability(const std::string& path, const Testbed& testbed) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read the availability file '{}'", path);
  if (std::filesystem::file_size(path) > (64u << 20))
    fail("{}: larger than 64 MiB; fablib's site list is a few hundred KiB", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  Availability out;
  out.path = path;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    const nlohmann::json sites = parse_json(path, text);
    for (const auto& s : sites) {
      bool usable = false;
      SiteAvailability site = read_fablib_site(path, s, testbed, out, usable);
      if (!usable) continue;
      if (!builtin_catalog().sites.count(site.name)) {
        out.left_out.push_back(site.name + ": not in the catalog (no round trip can be estimated)");
        continue;
      }
      out.sites.push_back(site);
    }
  } else {
    read_plain_yaml(path, text, testbed, out);
  }
  if (out.sites.empty())
    fail("{}: no site can host a GPU VM{}", path,
         out.left_out.empty() ? "" : fmt::format(" ({})", fmt::join(out.left_out, "; ")));
  return out;
}

}  // namespace fabtrain
