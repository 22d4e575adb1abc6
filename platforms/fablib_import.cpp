// Mapping a FIM property graph (a saved fablib slice) onto fabtrain's slice, see fablib_import.hpp.
#include "platforms/fablib_import.hpp"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "common/error.hpp"
#include "common/human_units.hpp"
#include "common/limits.hpp"
#include "common/strict_json.hpp"
#include "platforms/data_plane.hpp"
#include "platforms/property_graph.hpp"
#include "platforms/slice_yaml.hpp"

namespace fabtrain {
namespace {

// FIM's component Type and Model (fim/slivers/data/component_catalog.json) to catalog names.
struct ModelName {
  const char* type;
  const char* model;
  const char* catalog;
};
constexpr ModelName kGpuModels[] = {
    {"GPU", "RTX6000", "GPU_RTX6000"},  {"GPU", "Quadro RTX 6000/8000", "GPU_RTX6000"},
    {"GPU", "Tesla T4", "GPU_TeslaT4"}, {"GPU", "A30", "GPU_A30"},
    {"GPU", "A30 PCIe", "GPU_A30"},     {"GPU", "A40", "GPU_A40"},
};
constexpr ModelName kNicModels[] = {
    {"SharedNIC", "ConnectX-6", "NIC_Basic"},
    {"SmartNIC", "ConnectX-5", "NIC_ConnectX_5"},
    {"SmartNIC", "ConnectX-6", "NIC_ConnectX_6"},
    {"SmartNIC", "ConnectX-6-1P", "NIC_ConnectX_6"},
    {"SmartNIC", "ConnectX-7-100", "NIC_ConnectX_7_100"},
    {"SmartNIC", "ConnectX-7-400", "NIC_ConnectX_7_400"},
    {"SmartNIC", "BlueField-2-ConnectX-6", "NIC_BlueField2_ConnectX_6"},
};
// FIM's NetworkService Type to fabtrain's network kind.
const std::map<std::string, std::string> kNetworkKinds = {
    {"L2Bridge", "l2bridge"}, {"L2STS", "l2sts"},       {"L2PTP", "l2ptp"},
    {"FABNetv4", "fabnetv4"}, {"FABNetv6", "fabnetv6"},
};

template <size_t N>
std::string known_models(const ModelName (&table)[N]) {
  std::string out;
  for (const auto& m : table)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", m.type, m.model);
  return out;
}

template <size_t N>
std::string catalog_name(const PropertyGraph& g, int v, const ModelName (&table)[N],
                         const char* what) {
  const std::string& type = g.get(v, "Type");
  const std::string& model = g.get(v, "Model");
  for (const auto& m : table)
    if (type == m.type && model == m.model) return m.catalog;
  fail("{}: {}: unknown {} model '{}' of Type {} (known: {})", g.path, g.describe(v), what, model,
       type, known_models(table));
}

bool is_nic(const PropertyGraph& g, int v) {
  const std::string& type = g.get(v, "Type");
  return g.get(v, "Class") == "Component" && (type == "SharedNIC" || type == "SmartNIC");
}

nlohmann::json json_attribute(const PropertyGraph& g, int v, const char* key) {
  const std::string& text = g.get(v, key);
  if (text.empty()) return nlohmann::json::object();
  return parse_json_strict(text, fmt::format("{}: {}: {}", g.path, g.describe(v), key));
}

std::string capacities_text(const PropertyGraph& g, int v) {
  const nlohmann::json c = json_attribute(g, v, "Capacities");
  if (!c.is_object()) fail("{}: {}: Capacities must be a JSON object", g.path, g.describe(v));
  std::vector<std::string> parts;
  auto add = [&](const char* key, const char* unit) {
    if (c.contains(key) && c[key].is_number())
      parts.push_back(fmt::format("{} {}", c[key].dump(), unit));
  };
  add("core", "cores");
  add("ram", "GB RAM");
  add("disk", "GB disk");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// A vertex a walk from a network service reached (in its result: a VM), with the NIC component
// and the NIC's port (the interface fablib keeps the VM's address on) it was reached through;
// -1 when the walk met none.
struct Reached {
  int vertex = -1, nic = -1, port = -1;
};

// The VMs a network service reaches: a walk over the service's ConnectionPoints, Links and the
// NICs' own (OVS) services up to NetworkNodes, never into another network.
std::vector<Reached> reached_vms(const PropertyGraph& g, int service) {
  std::vector<Reached> out;
  std::unordered_set<int> seen{service};  // a walk stays near its service: no set of every vertex
  std::deque<Reached> todo{{service, -1, -1}};
  while (!todo.empty()) {
    const Reached at = todo.front();
    todo.pop_front();
    for (int u : g.neighbours(at.vertex)) {
      if (!seen.insert(u).second) continue;
      const std::string& cls = g.get(u, "Class");
      if (cls == "NetworkService" && g.get(u, "Type") != "OVS") continue;  // another network
      if (cls == "NetworkNode") {
        out.push_back({u, at.nic, at.port});
        continue;
      }
      const bool port = cls == "ConnectionPoint" && g.get(u, "Type") != "ServicePort";
      todo.push_back({u, cls == "Component" ? u : at.nic, port ? u : at.port});
    }
  }
  return out;
}

// fablib's own data on a vertex (UserData's "fablib_data"), an empty object when there is none.
nlohmann::json fablib_data(const PropertyGraph& g, int v) {
  const nlohmann::json user = json_attribute(g, v, "UserData");
  if (!user.is_object() || !user.contains("fablib_data") || !user["fablib_data"].is_object())
    return nlohmann::json::object();
  return user["fablib_data"];
}

std::string text_field(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// A network service's subnet: FABNetv4/v6's Gateway (FIM), else the subnet fablib keeps for an
// L2 network it assigns addresses on; "" when the file has none.
std::string service_subnet(const PropertyGraph& g, int service) {
  const nlohmann::json gateway = json_attribute(g, service, "Gateway");
  for (const char* key : {"ipv4_subnet", "ipv6_subnet"})
    if (const std::string s = text_field(gateway, key); !s.empty()) return s;
  const nlohmann::json data = fablib_data(g, service);
  return data.contains("subnet") ? text_field(data["subnet"], "subnet") : "";
}

// `name`, else the first of name-2, name-3, ... not taken, which it takes; `next` keeps each
// name's next suffix, so many networks of one name cost no more than as many names.
std::string unique_name(const std::string& name, std::set<std::string>& taken,
                        std::map<std::string, int>& next) {
  std::string out = name;
  for (int& i = next.try_emplace(name, 2).first->second; taken.count(out); ++i)
    out = fmt::format("{}-{}", name, i);
  taken.insert(out);
  return out;
}

// What the file says of a network's data plane: each member VM's address and device there, and the
// subnets of its services (a routed network has one service per site).
struct NetworkAddress {
  std::string address, device;
};
struct DataPlaneFound {
  std::map<std::string, NetworkAddress> by_vm;
  std::set<std::string> subnets;
  void add(const std::map<std::string, NetworkAddress>& found, const std::string& subnet) {
    for (const auto& [vm, a] : found) by_vm.emplace(vm, a);
    if (!subnet.empty()) subnets.insert(subnet);
  }
};

// "a (b), c (d)": values and where they were found, for assumption lines.
std::string listed(const std::map<std::string, std::string>& where_what) {
  std::string out;
  for (const auto& [where, what] : where_what)
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", what, where);
  return out;
}

// A network's subnet and interface where the file gives one for all its VMs, and each VM's
// address on the first network that has one; what is given but cannot be written is said.
void apply_data_plane(ImportedSlice& out, const std::map<std::string, DataPlaneFound>& plane) {
  for (Network& net : out.networks) {
    const auto it = plane.find(net.name);
    if (it == plane.end()) continue;
    const DataPlaneFound& found = it->second;
    if (found.subnets.size() == 1) {
      net.subnet = *found.subnets.begin();
      check_subnet(fmt::format("{}: network '{}' subnet", out.path, net.name), net.subnet);
    } else if (found.subnets.size() > 1) {
      out.assumptions.push_back(fmt::format(
          "network '{}' ({}) has a subnet per site ({}): none is written, the launch line uses "
          "FABRIC's block for {} (platforms/data/data_plane.yaml)",
          net.name, net.kind, fmt::join(found.subnets, ", "), net.kind));
    }
    std::map<std::string, std::string> devices;  // VM -> device
    for (const auto& vm : net.vms)
      if (const auto a = found.by_vm.find(vm); a != found.by_vm.end() && !a->second.device.empty())
        devices[vm] = a->second.device;
    std::set<std::string> names;
    for (const auto& [vm, device] : devices) names.insert(device);
    if (names.size() == 1 && devices.size() == net.vms.size()) {
      net.interface = *names.begin();
      check_interface_name(fmt::format("{}: network '{}' interface", out.path, net.name),
                           net.interface);
    } else if (names.size() > 1) {
      out.assumptions.push_back(
          fmt::format("network '{}': its VMs reach it through differently named devices ({}): no "
                      "interface is written (the launch line selects by subnet)",
                      net.name, listed(devices)));
    }
  }
  for (auto& iv : out.vms) {
    std::map<std::string, std::string> addresses;  // network -> address, of this VM
    for (const Network& net : out.networks)
      if (const auto it = plane.find(net.name); it != plane.end())
        if (const auto a = it->second.by_vm.find(iv.vm.name);
            a != it->second.by_vm.end() && !a->second.address.empty())
          addresses[net.name] = a->second.address;
    for (const Network& net : out.networks) {  // the first network, in file order
      const auto a = addresses.find(net.name);
      if (a == addresses.end()) continue;
      if (a->second.find_first_of(" \t,:#'\"") != std::string::npos) {
        out.assumptions.push_back(fmt::format(
            "VM '{}': its address {} on network '{}' is no IPv4 address or host name: not written",
            iv.vm.name, a->second, net.name));
        continue;
      }
      iv.vm.address = a->second;
      if (addresses.size() > 1)
        out.assumptions.push_back(fmt::format(
            "VM '{}' has addresses on {} networks ({}); its address is the one on '{}', the first",
            iv.vm.name, addresses.size(), listed(addresses), net.name));
      break;
    }
  }
}

// One import, phase by phase: the VMs with GPUs, the networks joining them, the networks kept,
// their data plane, each VM's NIC; what a phase leaves out or assumes is noted in `out_` in that
// order.
class FablibImport {
 public:
  FablibImport(const std::string& path, const Catalog& catalog)
      : g_(read_property_graph(path)), catalog_(catalog), path_(path) {
    out_.path = path;
    out_.format = g_.format;
    out_.name = std::filesystem::path(path).stem().string();
    if (std::none_of(g_.vertices.begin(), g_.vertices.end(),
                     [](auto& v) { return v.props.count("Class"); }))
      fail("{}: a {} graph, but no vertex has a Class: not a FIM topology saved by fablib", path,
           g_.format);
  }

  ImportedSlice run() {
    read_vms();
    read_networks();
    keep_networks();
    apply_data_plane(out_, plane_);
    note_routed_networks();
    for (int i = 0; i < int(out_.vms.size()); ++i) choose_nic(i);
    if (!reservation_state_.empty())
      out_.assumptions.push_back(
          fmt::format("an instantiated slice (reservation state {}); VMs with the "
                      "same host share one physical machine",
                      reservation_state_));
    out_.assumptions.push_back(
        "round trips and bandwidths: the saved file has none; the catalog's are used (estimated) "
        "until "
        "`fabtrain-exec probe` measures them");
    out_.assumptions.push_back("GPUs of a VM talk over PCIe (FABRIC hosts fit no NVLink bridges)");
    return out_;
  }

 private:
  // The GPU VMs a network service reaches, in walk order, and what the file says of their
  // address and device on it.
  struct Members {
    std::vector<std::string> vms;
    std::map<std::string, NetworkAddress> found;  // by member VM
  };

  // VMs and their GPUs; VMs without a GPU are left out.
  void read_vms() {
    std::int64_t gpus = 0;
    int vm_vertices = 0;
    for (int v = 0; v < int(g_.vertices.size()); ++v) {
      if (g_.get(v, "Class") != "NetworkNode" || g_.get(v, "Type") != "VM") continue;
      ++vm_vertices;
      if (!read_vm(v)) continue;
      gpus += out_.vms.back().vm.gpus;
      check_limit(fmt::format("{}: the slice's GPU count (through VM '{}')", path_,
                              out_.vms.back().vm.name),
                  gpus, limits::gpus);
    }
    if (vm_vertices == 0) fail("{}: no VM in the slice (no NetworkNode vertex of Type VM)", path_);
    if (out_.vms.empty())
      fail("{}: none of its {} VMs has a GPU, so there is nothing to train on", path_, vm_vertices);
  }

  // Adds VM vertex v to out_.vms; false when it has no GPU (left out).
  bool read_vm(int v) {
    ImportedVm iv;
    Vm& vm = iv.vm;
    vm.name = g_.get(v, "Name");
    if (vm.name.empty()) fail("{}: {}: a VM needs a Name", path_, g_.describe(v));
    if (!vm_names_.insert(vm.name).second)
      fail("{}: {}: two VMs are named '{}'", path_, g_.describe(v), vm.name);
    vm.site = g_.get(v, "Site");
    if (vm.site.empty()) fail("{}: {}: VM '{}' has no Site", path_, g_.describe(v), vm.name);
    iv.capacities = capacities_text(g_, v);
    const std::map<std::string, int> gpu_counts = vm_gpus(v, vm);
    if (gpu_counts.empty()) {
      out_.left_out.push_back(fmt::format("VM '{}' at {}: no GPU", vm.name, vm.site));
      return false;
    }
    check_site(v, vm);
    vm.gpu = gpu_counts.begin()->first;
    vm.gpus = gpu_counts.begin()->second;
    const nlohmann::json labels = json_attribute(g_, v, "LabelAllocations");
    if (labels.is_object() && labels.contains("instance_parent") &&
        labels["instance_parent"].is_string())
      vm.host = labels["instance_parent"].get<std::string>();
    const nlohmann::json reservation = json_attribute(g_, v, "ReservationInfo");
    if (reservation.is_object() && reservation.contains("reservation_state"))
      reservation_state_ = reservation["reservation_state"].is_string()
                               ? reservation["reservation_state"].get<std::string>()
                               : reservation["reservation_state"].dump();
    vm_of_vertex_[v] = int(out_.vms.size());
    vertex_of_vm_.push_back(v);
    out_.vms.push_back(iv);
    return true;
  }

  // GPU catalog name -> count of VM vertex v; at most one type.
  std::map<std::string, int> vm_gpus(int v, const Vm& vm) const {
    std::map<std::string, int> gpu_counts;
    const std::vector<int> near = g_.neighbours(v);
    for (int c : std::set<int>(near.begin(), near.end()))  // an edge given twice is one GPU
      if (g_.get(c, "Class") == "Component" && g_.get(c, "Type") == "GPU")
        ++gpu_counts[catalog_name(g_, c, kGpuModels, "GPU")];
    if (gpu_counts.size() > 1) {
      std::string types;
      for (const auto& [t, k] : gpu_counts)
        types += fmt::format("{}{} x {}", types.empty() ? "" : ", ", k, t);
      fail("{}: {}: VM '{}' holds GPUs of two types ({}); a fabtrain VM holds one type", path_,
           g_.describe(v), vm.name, types);
    }
    return gpu_counts;
  }

  void check_site(int v, const Vm& vm) const {
    if (catalog_.sites.count(vm.site)) return;
    std::string known;
    for (const auto& [name, s] : catalog_.sites) known += (known.empty() ? "" : ", ") + name;
    fail(
        "{}: {}: VM '{}' is at site '{}', which the catalog does not know (known: {}); add it "
        "with --catalog",
        path_, g_.describe(v), vm.name, vm.site, known);
  }

  // Networks, in file order; FABNetv4 (v6) services, one per site, are one routed network.
  void read_networks() {
    for (int v = 0; v < int(g_.vertices.size()); ++v) {
      if (g_.get(v, "Class") != "NetworkService") continue;
      const std::string& type = g_.get(v, "Type");
      if (type == "OVS") continue;  // a NIC's own switch, not a network of the slice
      const std::string name = g_.get(v, "Name").empty() ? g_.vertices[v].id : g_.get(v, "Name");
      const auto kind = kNetworkKinds.find(type);
      if (kind == kNetworkKinds.end()) {
        out_.left_out.push_back(
            fmt::format("network '{}': Type {} is not one fabtrain models", name, type));
        continue;
      }
      const Members members = network_members(v);
      add_network(name, kind->second, members, service_subnet(g_, v));
    }
  }

  // What network service v reaches; notes the NICs it reaches each GPU VM through.
  Members network_members(int v) {
    Members members;
    for (const Reached& r : reached_vms(g_, v)) {
      const auto it = vm_of_vertex_.find(r.vertex);
      if (it == vm_of_vertex_.end()) continue;  // a VM without GPU
      const std::string& vm_name = out_.vms[it->second].vm.name;
      if (std::find(members.vms.begin(), members.vms.end(), vm_name) == members.vms.end())
        members.vms.push_back(vm_name);
      if (r.nic >= 0) nics_used_[it->second].push_back(r.nic);
      if (r.port >= 0) {
        const nlohmann::json data = fablib_data(g_, r.port);
        members.found[vm_name] = {text_field(data, "addr"), text_field(data, "dev")};
      }
    }
    return members;
  }

  // A new network of `members`, or more members of the routed network of its kind.
  void add_network(const std::string& name, const std::string& kind, const Members& members,
                   const std::string& subnet) {
    const bool is_routed = kind == "fabnetv4" || kind == "fabnetv6";
    if (is_routed && routed_.count(kind)) {
      Network& net = out_.networks[routed_[kind]];
      for (const auto& m : members.vms)
        if (std::find(net.vms.begin(), net.vms.end(), m) == net.vms.end()) net.vms.push_back(m);
      routed_services_[kind].push_back(name);
      plane_[net.name].add(members.found, subnet);
      return;
    }
    Network net;
    net.name = unique_name(is_routed ? kind : name, network_names_, next_suffix_);
    net.kind = kind;
    net.vms = members.vms;
    if (is_routed) {
      routed_[kind] = int(out_.networks.size());
      routed_services_[kind].push_back(name);
    }
    plane_[net.name].add(members.found, subnet);
    out_.networks.push_back(net);
  }

  // Sites per network; drop what joins fewer than two GPU VMs.
  void keep_networks() {
    std::map<std::string, std::string> site_of_vm;
    for (const auto& iv : out_.vms) site_of_vm[iv.vm.name] = iv.vm.site;
    std::vector<Network> kept;
    for (auto& net : out_.networks) {
      if (net.vms.size() < 2) {
        out_.left_out.push_back(
            fmt::format("network '{}' ({}): joins {} with a GPU, fewer than two", net.name,
                        net.kind, counted(net.vms.size(), "VM")));
        continue;
      }
      for (const auto& m : net.vms) {
        const std::string& site = site_of_vm.at(m);
        if (std::find(net.sites.begin(), net.sites.end(), site) == net.sites.end())
          net.sites.push_back(site);
      }
      check_network_sites(net);
      kept.push_back(net);
    }
    out_.networks = kept;
  }

  void check_network_sites(Network& net) {
    if (net.kind == "l2bridge" && net.sites.size() != 1)
      fail(
          "{}: network '{}' is an L2Bridge, which stays inside one site, but reaches VMs at {} "
          "sites",
          path_, net.name, net.sites.size());
    if (is_two_site_kind(net.kind) && net.sites.size() == 1) {
      out_.assumptions.push_back(
          fmt::format("network '{}' ({}) joins only VMs at {} once the VMs without GPU are left "
                      "out: written as l2bridge",
                      net.name, net.kind, net.sites[0]));
      net.kind = "l2bridge";
    }
  }

  void note_routed_networks() {
    for (const auto& [kind, services] : routed_services_)
      if (services.size() > 1) {
        std::string list;
        for (const auto& s : services) list += (list.empty() ? "" : ", ") + s;
        out_.assumptions.push_back(fmt::format(
            "the {} services {} (one per site) are one routed network, as FABRIC routes between "
            "them",
            kind, list));
      }
  }

  // VM i's NIC: the fastest one a network reaches it through, else its first NIC.
  void choose_nic(int i) {
    Vm& vm = out_.vms[i].vm;
    const int vm_vertex = vertex_of_vm_[i];
    std::vector<int> candidates = nics_used_[i];
    if (candidates.empty())
      for (int c : g_.neighbours(vm_vertex))
        if (is_nic(g_, c)) candidates.push_back(c);
    for (int c : g_.neighbours(vm_vertex))  // every NIC of a GPU VM must be known
      if (is_nic(g_, c)) catalog_name(g_, c, kNicModels, "NIC");
    if (candidates.empty()) {
      vm.nic = "NIC_Basic";
      out_.assumptions.push_back(fmt::format(
          "VM '{}' has no dataplane NIC; NIC_Basic is written in its place (no network reaches it)",
          vm.name));
      return;
    }
    double best = -1;
    std::set<std::string> types;
    for (int c : candidates) {
      const std::string name = catalog_name(g_, c, kNicModels, "NIC");
      types.insert(name);
      const double bw = catalog_.nic(name).bandwidth;
      if (bw > best) best = bw, vm.nic = name;
    }
    if (types.size() > 1)
      out_.assumptions.push_back(fmt::format(
          "VM '{}' has NICs of {} types on its networks; the fastest, {}, is the one modelled",
          vm.name, types.size(), vm.nic));
  }

  const PropertyGraph g_;
  const Catalog& catalog_;
  const std::string path_;
  ImportedSlice out_;
  std::map<int, int> vm_of_vertex_;  // graph vertex -> index into out_.vms
  std::vector<int> vertex_of_vm_;    // index into out_.vms -> graph vertex
  std::set<std::string> vm_names_;
  std::string reservation_state_;
  std::map<int, std::vector<int>> nics_used_;  // VM index -> NIC vertices networks reach it by
  std::set<std::string> network_names_;
  std::map<std::string, int> next_suffix_;
  std::map<std::string, int> routed_;  // kind -> index into out_.networks
  std::map<std::string, std::vector<std::string>> routed_services_;
  std::map<std::string, DataPlaneFound> plane_;  // by network name
};

}  // namespace

ImportedSlice import_fablib_slice(const std::string& path, const Catalog& catalog) {
  return FablibImport(path, catalog).run();
}

std::string to_slice_yaml(const ImportedSlice& s) {
  SliceDraft d;
  const std::string file = std::filesystem::path(s.path).filename().string();
  d.comment = fmt::format("Imported by `fabtrain slice import` from {} ({} saved by fablib).", file,
                          s.format);
  d.name = s.name;
  std::vector<std::string> sites;
  for (const auto& iv : s.vms)
    if (std::find(sites.begin(), sites.end(), iv.vm.site) == sites.end())
      sites.push_back(iv.vm.site);
  d.description = fmt::format("fablib slice {} ({} VMs with GPUs, sites {})", file, s.vms.size(),
                              fmt::join(sites, ", "));
  d.assumptions = s.assumptions;
  for (const auto& l : s.left_out) d.assumptions.push_back("left out: " + l);
  for (const auto& iv : s.vms) {
    d.vms.push_back(iv.vm);
    d.vm_comments.push_back(iv.capacities);
  }
  d.networks = s.networks;
  return to_slice_yaml(d);
}

}  // namespace fabtrain
