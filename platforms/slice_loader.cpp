// Loads a slice file (a built-in name or a path) and checks it against the catalog: known GPU,
// NIC and site names, unique VM and network names, networks that join VMs that exist in a way
// their kind allows (l2bridge: one site; l2sts: exactly two), and every pair of VMs joined.
// Its VMs are then put in one order whatever order the file lists them in
// (put_vms_in_canonical_order). What a Slice answers once loaded is slice.cpp.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "common/limits.hpp"
#include "platforms/catalog_section.hpp"
#include "platforms/data_plane.hpp"
#include "platforms/slice.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {
namespace {

namespace fs = std::filesystem;

std::string builtin_slice_dir() { return source_dir() + "/platforms/data/slices"; }

template <typename Map>
std::string known_names(const Map& map) {
  std::string out;
  for (const auto& [name, value] : map) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : ", ") + s;
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

Vm read_vm(const YamlFields& f, const Catalog& cat) {
  f.allow_only({"name", "site", "gpu", "gpus", "nic", "interconnect", "host", "address"});
  Vm vm;
  vm.name = f.text("name");
  if (vm.name.empty()) fail("{}: must not be empty", f.field("name"));
  vm.site = f.text("site");
  if (!cat.sites.count(vm.site))
    fail("{}: unknown site '{}' (known: {}; add one with --catalog or a catalog: section)",
         f.field("site"), vm.site, known_names(cat.sites));
  vm.gpu = f.text("gpu");
  if (!cat.gpus.count(vm.gpu))
    fail("{}: unknown GPU type '{}' (known: {}; add one with --catalog or a catalog: section)",
         f.field("gpu"), vm.gpu, known_names(cat.gpus));
  vm.gpus = f.integer("gpus");
  if (vm.gpus < 1) fail("{}: {} must be at least 1", f.field("gpus"), vm.gpus);
  check_limit(f.field("gpus"), vm.gpus, limits::gpus);
  vm.nic = f.text("nic");
  if (!cat.nics.count(vm.nic))
    fail("{}: unknown NIC type '{}' (known: {})", f.field("nic"), vm.nic, known_names(cat.nics));
  vm.interconnect = f.text_or("interconnect", "pcie");
  if (vm.interconnect != "pcie" && vm.interconnect != "pcie-host" && vm.interconnect != "nvlink")
    fail(
        "{}: '{}' is none of pcie, pcie-host (peer-to-peer disabled: through host memory) and "
        "nvlink",
        f.field("interconnect"), vm.interconnect);
  if (vm.interconnect == "nvlink" && cat.gpus.at(vm.gpu).nvlink_bandwidth <= 0)
    fail("{}: {} has no NVLink", f.field("interconnect"), vm.gpu);
  vm.host = f.text_or("host", "");
  vm.address = f.text_or("address", "");
  if (f.has("address") &&
      (vm.address.empty() || vm.address.find_first_of(" \t,:#'\"") != std::string::npos))
    fail("{}: '{}' is not a host name or IPv4 address (no spaces, commas, colons or quotes)",
         f.field("address"), vm.address);
  return vm;
}

// The sites of a network's VMs, in order of first appearance; every VM named must exist, once.
std::vector<std::string> member_sites(const YamlFields& f, const Network& n,
                                      const std::vector<Vm>& vms) {
  std::vector<std::string> sites;
  for (const auto& name : n.vms) {
    auto vm = std::find_if(vms.begin(), vms.end(), [&](const Vm& v) { return v.name == name; });
    if (vm == vms.end()) {
      std::vector<std::string> known;
      for (const auto& v : vms) known.push_back(v.name);
      fail("{}: no VM named '{}' in this slice (VMs: {})", f.field("vms"), name, joined(known));
    }
    if (std::count(n.vms.begin(), n.vms.end(), name) > 1)
      fail("{}: VM '{}' is listed twice", f.field("vms"), name);
    if (!contains(sites, vm->site)) sites.push_back(vm->site);
  }
  return sites;
}

// A network's sites: the two an l2sts or l2ptp network joins (named, or its VMs'), else its VMs'.
std::vector<std::string> network_sites(const YamlFields& f, const Network& n,
                                       const std::vector<std::string>& member_sites,
                                       const Catalog& cat) {
  if (!is_two_site_kind(n.kind)) {
    if (n.kind == "l2bridge" && member_sites.size() != 1)
      fail("{}: an l2bridge network stays inside one site, its VMs are at [{}] (use l2sts)",
           f.field("vms"), joined(member_sites));
    return member_sites;
  }
  std::vector<std::string> named = f.has("sites") ? f.text_list_or("sites") : member_sites;
  for (const auto& s : named)
    if (!cat.sites.count(s))
      fail("{}: unknown site '{}' (known: {})", f.field("sites"), s, known_names(cat.sites));
  const std::set<std::string> distinct(named.begin(), named.end());
  if (named.size() != 2 || distinct.size() != 2)
    fail("{}: an {} network joins exactly two sites, found [{}]", f.field("sites"), n.kind,
         joined(named));
  for (const auto& s : member_sites)
    if (!distinct.count(s))
      fail("{}: has a VM at {}, which is not one of its sites [{}]", f.field("vms"), s,
           joined(named));
  for (const auto& s : named)
    if (!contains(member_sites, s))
      fail("{}: no VM at site {}, so the network does not join two sites", f.field("vms"), s);
  return named;
}

// The network's own round trip, bandwidth and TCP window, where it states them.
void read_network_path(const YamlFields& f, Network& n, std::size_t member_site_count) {
  if (f.has("rtt_ms")) {
    if (n.kind == "l2bridge")
      fail(
          "{}: an l2bridge network's latency is its link class's; rtt_ms applies to networks "
          "between sites and to switched ones",
          f.field("rtt_ms"));
    const double ms = f.number("rtt_ms");
    if (ms < 0) fail("{}: latency {} ms is negative", f.field("rtt_ms"), ms);
    if (ms > limits::rtt_ms_max)
      fail("{}: {} ms; fabtrain handles at most {} ms (the longest paths on Earth take 600 ms)",
           f.field("rtt_ms"), ms, limits::rtt_ms_max);
    n.rtt_s = ms * 1e-3;
  } else if (n.kind == "switched" && member_site_count == 1) {
    fail("{}: missing: a switched network inside one site must give its round-trip latency",
         f.field("rtt_ms"));
  }
  const double gbit = f.number_or("bandwidth_gbit_s", 0);
  if (gbit < 0) fail("{}: bandwidth {} is negative", f.field("bandwidth_gbit_s"), gbit);
  if (gbit > limits::bandwidth_gbit_s_max)
    fail("{}: {} Gbit/s; fabtrain handles at most {} (the fastest links carry a few Tbit/s)",
         f.field("bandwidth_gbit_s"), gbit, limits::bandwidth_gbit_s_max);
  n.bandwidth = gbit * 1e9 / 8;
  if (f.has("tcp_window_mib")) {
    const double mib = f.number("tcp_window_mib");
    if (mib < 0) fail("{}: window {} MiB is negative", f.field("tcp_window_mib"), mib);
    if (mib > limits::tcp_window_mib_max)
      fail("{}: {} MiB; fabtrain handles at most {} MiB (Linux caps TCP buffers at 2 GiB)",
           f.field("tcp_window_mib"), mib, limits::tcp_window_mib_max);
    n.tcp_window_bytes = mib * 1024 * 1024;
  }
}

Network read_network(const YamlFields& f, const std::vector<Vm>& vms, const Catalog& cat) {
  f.allow_only({"name", "kind", "vms", "sites", "rtt_ms", "bandwidth_gbit_s", "tcp_window_mib",
                "subnet", "interface"});
  Network n;
  n.name = f.text("name");
  if (n.name.empty()) fail("{}: must not be empty", f.field("name"));
  n.kind = f.text("kind");
  if (!contains(network_kinds(), n.kind))
    fail("{}: '{}' is not a network kind ({})", f.field("kind"), n.kind, joined(network_kinds()));
  if (!cat.link_classes.count(n.kind))
    fail("{}: the catalog ({}) has no link class '{}' for this kind of network", f.field("kind"),
         cat.path, n.kind);

  if (!f.has("vms")) fail("{}: missing (expected a list of VM names)", f.field("vms"));
  n.vms = f.text_list_or("vms");
  const std::vector<std::string> sites_of_vms = member_sites(f, n, vms);
  if (n.vms.size() < 2)
    fail("{}: a network joins at least two VMs, found {}", f.field("vms"), n.vms.size());
  if (f.has("sites") && !is_two_site_kind(n.kind))
    fail(
        "{}: only an l2sts or l2ptp network names its sites; a {} network's sites follow from its "
        "VMs",
        f.field("sites"), n.kind);
  if (n.kind == "l2ptp" && n.vms.size() != 2)
    fail("{}: an l2ptp network joins exactly two interfaces, so two VMs; found {}", f.field("vms"),
         n.vms.size());
  n.sites = network_sites(f, n, sites_of_vms, cat);
  read_network_path(f, n, sites_of_vms.size());
  n.subnet = f.text_or("subnet", "");
  if (f.has("subnet")) check_subnet(f.field("subnet"), n.subnet);
  n.interface = f.text_or("interface", "");
  if (f.has("interface")) check_interface_name(f.field("interface"), n.interface);
  return n;
}

SiteLink read_link(const YamlFields& f, const std::vector<std::string>& slice_sites) {
  f.allow_only({"sites", "rtt_ms", "rtt_p90_ms", "bandwidth_gbit_s", "bandwidth_one_stream_gbit_s",
                "streams", "source"});
  const std::vector<std::string> sites = f.text_list_or("sites");
  if (sites.size() != 2 || sites[0] == sites[1])
    fail("{}: a link joins two different sites, found [{}]", f.field("sites"), joined(sites));
  for (const auto& s : sites)
    if (!contains(slice_sites, s))
      fail("{}: site {} has no VM in this slice (sites: {})", f.field("sites"), s,
           joined(slice_sites));
  SiteLink l;
  l.a = sites[0], l.b = sites[1];
  auto non_negative = [&](const char* key) {
    const double v = f.number(key);
    if (!(v >= 0)) fail("{}: {} must be zero or positive", f.field(key), v);
    return v;
  };
  l.rtt_s = non_negative("rtt_ms") * 1e-3;
  if (f.has("rtt_p90_ms")) {
    l.rtt_p90_s = non_negative("rtt_p90_ms") * 1e-3;
    if (l.rtt_p90_s < l.rtt_s)
      fail("{}: the 90th percentile {} ms is below the median rtt_ms {} ms", f.field("rtt_p90_ms"),
           l.rtt_p90_s * 1e3, l.rtt_s * 1e3);
  }
  if (f.has("bandwidth_gbit_s")) l.bandwidth = non_negative("bandwidth_gbit_s") * 1e9 / 8;
  if (f.has("bandwidth_one_stream_gbit_s"))
    l.bandwidth_one_stream = non_negative("bandwidth_one_stream_gbit_s") * 1e9 / 8;
  l.streams = f.integer_or("streams", 0);
  if (l.streams < 0) fail("{}: {} must be zero or positive", f.field("streams"), l.streams);
  l.source = f.text("source");
  if (l.source.empty()) fail("{}: must say who measured the link, when and how", f.field("source"));
  return l;
}

std::string resolve_slice_path(const std::string& name_or_path) {
  if (fs::is_regular_file(name_or_path)) return name_or_path;
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               fs::path(name_or_path).extension() == ".yaml" ||
                               fs::path(name_or_path).extension() == ".yml";
  if (looks_like_path) fail("slice file not found: {}", name_or_path);
  const std::string builtin = builtin_slice_dir() + "/" + name_or_path + ".yaml";
  if (!fs::is_regular_file(builtin))
    fail("unknown slice '{}': neither a built-in slice ({}) nor a file", name_or_path,
         joined(builtin_slice_names()));
  return builtin;
}

// communicator: NAME, or {profile: NAME, <field>: value, ...} overriding the profile's fields
// where the run sets the library's knobs otherwise (e.g. a raised eager limit); absent: the
// catalog's default profile.
CommunicatorProfile read_communicator_choice(const YamlFields& top, const Catalog& catalog) {
  if (!top.has("communicator")) return catalog.communicator(catalog.default_communicator);
  const YamlNode node = top.node()["communicator"];
  auto profile = [&](const std::string& name, const std::string& field) {
    if (!catalog.communicators.count(name))
      fail("{}: unknown communicator profile '{}' (known: {})", field, name,
           known_names(catalog.communicators));
    return catalog.communicator(name);
  };
  if (node.is_scalar()) return profile(node.text(), top.field("communicator"));
  const YamlFields f(top.file(), "communicator", top.mapping("communicator"));
  f.allow_only({"profile", "streams_per_peer", "max_in_flight_mib", "eager_limit_kib",
                "rendezvous_round_trips"});
  CommunicatorProfile c = profile(f.text("profile"), f.field("profile"));
  auto at_least = [&](const char* key, double low) {
    const double v = f.number(key);
    if (!(v >= low)) fail("{}: {} must be at least {}", f.field(key), v, low);
    return v;
  };
  if (f.has("streams_per_peer")) c.streams_per_peer = int(at_least("streams_per_peer", 1));
  if (f.has("max_in_flight_mib"))
    c.max_in_flight_bytes = at_least("max_in_flight_mib", 0) * (1 << 20);
  if (f.has("eager_limit_kib")) c.eager_limit_bytes = at_least("eager_limit_kib", 0) * 1024;
  if (f.has("rendezvous_round_trips"))
    c.rendezvous_round_trips = at_least("rendezvous_round_trips", 0);
  return c;
}

// A VM's hardware, strongest first: GPU FP32 peak, memory, count, NVLink, NIC; then its name.
auto vm_key(const Vm& vm, const Catalog& cat) {
  const GpuType& g = cat.gpus.at(vm.gpu);
  return std::make_tuple(-g.peak_fp32_flops, -g.memory_bytes, -vm.gpus, vm.interconnect != "nvlink",
                         vm.nic, vm.name);
}

}  // namespace

void put_vms_in_canonical_order(Slice& slice) {
  const Catalog& cat = *slice.catalog;
  std::map<std::string, double> site_flops;  // each site's GPUs' FP32 peak together
  std::map<std::string, int> site_gpus, first_seen;
  for (std::size_t i = 0; i < slice.vms.size(); ++i) {
    const Vm& vm = slice.vms[i];
    site_flops[vm.site] += vm.gpus * cat.gpus.at(vm.gpu).peak_fp32_flops;
    site_gpus[vm.site] += vm.gpus;
    first_seen.emplace(vm.site, int(i));
  }
  std::stable_sort(slice.vms.begin(), slice.vms.end(), [&](const Vm& a, const Vm& b) {
    auto site = [&](const Vm& v) {
      return std::make_tuple(-site_flops[v.site], -site_gpus[v.site], first_seen[v.site]);
    };
    if (site(a) != site(b)) return site(a) < site(b);
    return vm_key(a, cat) < vm_key(b, cat);
  });
}

Slice load_slice(const std::string& name_or_path, const Catalog& catalog) {
  const std::string path = resolve_slice_path(name_or_path);
  const YamlNode root = load_yaml_file(path, "slice");
  const YamlFields top(path, "", root);
  top.allow_only({"name", "description", "assumptions", "catalog", "communicator", "vms",
                  "networks", "links"});
  Slice s;
  s.path = path;
  s.catalog = &catalog;
  if (top.has("catalog")) {
    s.own_catalog = std::make_shared<const Catalog>(
        extend_catalog(catalog, YamlFields(path, "catalog", top.mapping("catalog"))));
    s.catalog = s.own_catalog.get();
  }
  s.name = top.text_or("name", fs::path(path).stem().string());
  s.description = top.text_or("description", "");
  s.assumptions = top.text_list_or("assumptions");
  s.communicator = read_communicator_choice(top, *s.catalog);

  if (!top.has("vms")) fail("{}: missing (expected a list of VMs)", top.field("vms"));
  const YamlNode vms = top.sequence_or_empty("vms");
  if (vms.size() == 0) fail("{}: a slice needs at least one VM", top.field("vms"));
  std::int64_t gpus = 0;
  for (std::size_t i = 0; i < vms.size(); ++i) {
    Vm vm = read_vm(YamlFields(path, fmt::format("vms[{}]", i), vms[i]), *s.catalog);
    gpus += vm.gpus;  // each VM is within the limit, so the sum cannot wrap before it is checked
    check_limit(fmt::format("{}: vms: the slice's GPU count (through vms[{}])", path, i), gpus,
                limits::gpus);
    for (const auto& other : s.vms)
      if (other.name == vm.name) fail("{}: vms[{}].name: duplicate VM name '{}'", path, i, vm.name);
    s.vms.push_back(vm);
  }

  const YamlNode nets = top.sequence_or_empty("networks");
  for (std::size_t i = 0; i < nets.size(); ++i) {
    Network n =
        read_network(YamlFields(path, fmt::format("networks[{}]", i), nets[i]), s.vms, *s.catalog);
    for (const auto& other : s.networks)
      if (other.name == n.name)
        fail("{}: networks[{}].name: duplicate network name '{}'", path, i, n.name);
    s.networks.push_back(n);
  }

  const YamlNode links = top.sequence_or_empty("links");
  for (std::size_t i = 0; i < links.size(); ++i) {
    SiteLink l = read_link(YamlFields(path, fmt::format("links[{}]", i), links[i]), s.site_names());
    if (s.link_between(l.a, l.b))
      fail("{}: links[{}].sites: the pair {}-{} is listed twice", path, i, l.a, l.b);
    s.links.push_back(l);
  }

  // Every two VMs must share a network, or no collective could span them.
  for (std::size_t i = 0; i < s.vms.size(); ++i)
    for (std::size_t j = i + 1; j < s.vms.size(); ++j) {
      const bool joined_by_one =
          std::any_of(s.networks.begin(), s.networks.end(), [&](const Network& n) {
            return contains(n.vms, s.vms[i].name) && contains(n.vms, s.vms[j].name);
          });
      if (!joined_by_one)
        fail("{}: networks: no network joins VM '{}' ({}) and VM '{}' ({})", path, s.vms[i].name,
             s.vms[i].site, s.vms[j].name, s.vms[j].site);
    }
  for (const auto& vm : s.vms) s.vm_file_order.push_back(vm.name);
  put_vms_in_canonical_order(s);
  return s;
}

std::vector<std::string> builtin_slice_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(builtin_slice_dir(), ec))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace fabtrain
