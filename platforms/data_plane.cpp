#include "platforms/data_plane.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {
namespace {

void add_unique(std::vector<std::string>& list, const std::string& x) {
  if (std::find(list.begin(), list.end(), x) == list.end()) list.push_back(x);
}

std::string joined(const std::vector<std::string>& list, const char* sep) {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The networks any two of the VMs talk over (the first network joining each pair), in slice order.
std::vector<const Network*> crossed_networks(const Slice& slice,
                                             const std::vector<std::string>& vms) {
  std::vector<const Network*> out;
  for (std::size_t i = 0; i < vms.size(); ++i)
    for (std::size_t j = i + 1; j < vms.size(); ++j) {
      if (vms[i] == vms[j]) continue;
      const Network* n = &slice.network_between(vms[i], vms[j]);
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
  std::sort(out.begin(), out.end());  // networks live in one vector: address order is file order
  return out;
}

}  // namespace

DataPlaneDefaults load_data_plane_defaults(const std::string& path) {
  const YamlFields top(path, "", load_yaml_file(path, "data-plane defaults"));
  top.allow_only({"management_interface", "management_interface_source", "subnets"});
  DataPlaneDefaults d;
  d.management_interface = top.text("management_interface");
  check_interface_name(top.field("management_interface"), d.management_interface);
  d.management_source = top.text("management_interface_source");
  const YamlNode subnets = top.mapping("subnets");
  for (const auto& [kind, value] : subnets.entries()) {
    const YamlFields f(path, "subnets." + kind, value);
    f.allow_only({"subnet", "source"});
    DataPlaneDefaults::Subnet s{f.text("subnet"), f.text("source")};
    check_subnet(f.field("subnet"), s.subnet);
    const auto kinds = network_kinds();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      fail("{}: '{}' is not a network kind", top.field("subnets"), kind);
    d.subnets[kind] = s;
  }
  return d;
}

const DataPlaneDefaults& builtin_data_plane_defaults() {
  static const DataPlaneDefaults d =
      load_data_plane_defaults(source_dir() + "/platforms/data/data_plane.yaml");
  return d;
}

void check_subnet(const std::string& field, const std::string& subnet) {
  const auto slash = subnet.find('/');
  const std::string address = subnet.substr(0, slash);
  unsigned char buf[16];
  const bool v4 = inet_pton(AF_INET, address.c_str(), buf) == 1;
  const bool v6 = !v4 && inet_pton(AF_INET6, address.c_str(), buf) == 1;
  int bits = -1;
  if (slash != std::string::npos) {
    const std::string len = subnet.substr(slash + 1);
    if (!len.empty() && len.size() <= 3 &&
        std::all_of(len.begin(), len.end(), [](char c) { return std::isdigit(uint8_t(c)); }))
      bits = std::stoi(len);
  }
  if ((!v4 && !v6) || bits < 0 || bits > (v4 ? 32 : 128))
    fail("{}: '{}' is not a subnet in CIDR notation (e.g. 192.168.10.0/24 or 10.128.0.0/10)", field,
         subnet);
}

void check_interface_name(const std::string& field, const std::string& name) {
  // Linux: at most 15 bytes (IFNAMSIZ - 1), no '/', whitespace or ':'; we keep to what shells
  // and NCCL's comma-separated lists pass unharmed.
  const bool ok =
      !name.empty() && name.size() <= 15 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(uint8_t(c)) || c == '_' || c == '-' || c == '.';
      });
  if (!ok)
    fail(
        "{}: '{}' is not a network interface name (letters, digits, '_', '-', '.', at most 15, "
        "e.g. enp7s0)",
        field, name);
}

DataPlaneSelection data_plane_for(const Slice& slice, const std::vector<std::string>& vms,
                                  bool nccl, const DataPlaneDefaults& defaults) {
  DataPlaneSelection out;
  out.networks = crossed_networks(slice, vms);
  if (out.networks.empty()) return out;
  bool every_subnet = true, every_interface = true;
  std::vector<std::string> subnets, interfaces;
  for (const Network* n : out.networks) {
    std::string subnet = n->subnet;
    if (subnet.empty() && n->interface.empty() && defaults.subnets.count(n->kind)) {
      subnet = defaults.subnets.at(n->kind).subnet;
      out.notes.push_back(fmt::format("network {} gives no subnet: FABRIC's {} block {} assumed",
                                      n->name, n->kind, subnet));
    }
    if (!subnet.empty()) add_unique(subnets, subnet);
    if (!n->interface.empty()) add_unique(interfaces, n->interface);
    every_subnet = every_subnet && !subnet.empty();
    every_interface = every_interface && !n->interface.empty();
  }
  // Open MPI takes subnets or names; NCCL names (prefixes) only.
  if (every_interface)
    out.mpi_include = interfaces;
  else if (every_subnet)
    out.mpi_include = subnets;
  const std::string mgmt = defaults.management_interface;
  if (out.mpi_include.empty()) out.mpi_exclude = {"lo", mgmt};
  out.nccl_socket_ifname = every_interface ? joined(interfaces, ",") : "^lo,docker," + mgmt;
  std::vector<std::string> bare;  // networks that named no interface, for the note
  for (const Network* n : out.networks)
    if (n->interface.empty()) bare.push_back(n->name);
  if (!bare.empty() && (nccl || out.mpi_include.empty()))
    out.notes.push_back(fmt::format(
        "network{} {} name{} no interface: {} any but loopback and {} (FABRIC's management "
        "interface, an assumption); set `interface:` and `subnet:` in the slice to choose",
        bare.size() == 1 ? "" : "s", joined(bare, ", "), bare.size() == 1 ? "s" : "",
        !out.mpi_include.empty() ? "NCCL uses"
        : nccl                   ? "MPI and NCCL use"
                                 : "MPI uses",
        mgmt));
  return out;
}

}  // namespace fabtrain
