// Loads platforms/data/catalog.yaml (or another catalog file) into a Catalog, converting the
// file's units (GiB, TFLOP/s, GB/s, Gbit/s, ms, us, MiB) to bytes, FLOP/s, bytes/s and seconds.
// Rejects unknown keys, wrong types, missing or negative numbers and dangling site names.
#include <filesystem>
#include <set>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "platforms/catalog.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

// A number that must be present and >= 0 (or > 0 when `positive`).
double non_negative(const YamlFields& f, const std::string& key, bool positive = false) {
  const double v = f.number(key);
  if (v < 0 || (positive && v == 0))
    fail("{}: {} must be {}", f.field(key), v, positive ? "positive" : "zero or positive");
  return v;
}

std::string required_source(const YamlFields& f) {
  std::string s = f.text("source");
  if (s.empty()) fail("{}: must say where the numbers come from", f.field("source"));
  return s;
}

GpuType read_gpu(const YamlFields& f, const std::string& name) {
  f.allow_only({"description", "memory_gib", "peak_fp32_tflops", "peak_tf32_tflops",
                "peak_fp16_tflops", "peak_bf16_tflops", "memory_bandwidth_gb_s", "pcie_generation",
                "pcie_bandwidth_gb_s", "nvlink_bandwidth_gb_s", "is_cpu", "source"});
  GpuType g;
  g.name = name;
  g.description = f.text("description");
  g.memory_bytes = non_negative(f, "memory_gib", true) * kGiB;
  g.peak_fp32_flops = non_negative(f, "peak_fp32_tflops", true) * 1e12;
  g.peak_tf32_flops = non_negative(f, "peak_tf32_tflops") * 1e12;
  g.peak_fp16_flops = non_negative(f, "peak_fp16_tflops") * 1e12;
  g.peak_bf16_flops = non_negative(f, "peak_bf16_tflops") * 1e12;
  g.memory_bandwidth = non_negative(f, "memory_bandwidth_gb_s", true) * 1e9;
  g.pcie_generation = f.integer("pcie_generation");
  if (g.pcie_generation < 0) fail("{}: must be zero or positive", f.field("pcie_generation"));
  g.pcie_bandwidth = non_negative(f, "pcie_bandwidth_gb_s") * 1e9;
  g.nvlink_bandwidth = non_negative(f, "nvlink_bandwidth_gb_s") * 1e9;
  g.is_cpu = f.flag_or("is_cpu", false);
  if (!g.is_cpu && g.pcie_bandwidth == 0)
    fail("{}: a GPU needs a PCIe bandwidth", f.field("pcie_bandwidth_gb_s"));
  g.source = required_source(f);
  return g;
}

NicType read_nic(const YamlFields& f, const std::string& name) {
  f.allow_only({"bandwidth_gbit_s", "source"});
  return {name, non_negative(f, "bandwidth_gbit_s", true) * 1e9 / 8, required_source(f)};
}

Site read_site(const YamlFields& f, const std::string& name) {
  f.allow_only({"location", "latitude", "longitude"});
  Site s{name, f.text("location"), f.number("latitude"), f.number("longitude")};
  if (s.latitude < -90 || s.latitude > 90) fail("{}: {} is not in [-90, 90]", f.field("latitude"), s.latitude);
  if (s.longitude < -180 || s.longitude > 180)
    fail("{}: {} is not in [-180, 180]", f.field("longitude"), s.longitude);
  return s;
}

LinkClass read_link_class(const YamlFields& f, const std::string& name) {
  f.allow_only({"latency_us", "tcp_window_mib", "efficiency", "source"});
  LinkClass c;
  c.name = name;
  c.latency_s = non_negative(f, "latency_us") * 1e-6;
  c.tcp_window_bytes = non_negative(f, "tcp_window_mib") * kMiB;
  c.efficiency = non_negative(f, "efficiency", true);
  if (c.efficiency > 1) fail("{}: {} is above 1", f.field("efficiency"), c.efficiency);
  c.source = required_source(f);
  return c;
}

CommunicatorProfile read_communicator(const YamlFields& f, const std::string& name) {
  f.allow_only({"library", "streams_per_peer", "max_in_flight_mib", "eager_limit_kib",
                "rendezvous_round_trips", "knobs", "source"});
  CommunicatorProfile c;
  c.name = name;
  c.library = f.text("library");
  c.streams_per_peer = f.integer("streams_per_peer");
  if (c.streams_per_peer < 1) fail("{}: must be at least 1", f.field("streams_per_peer"));
  c.max_in_flight_bytes = non_negative(f, "max_in_flight_mib") * kMiB;
  c.eager_limit_bytes = non_negative(f, "eager_limit_kib") * 1024;
  c.rendezvous_round_trips = non_negative(f, "rendezvous_round_trips");
  for (const auto& kv : f.mapping("knobs")) c.knobs[kv.first.Scalar()] = kv.second.Scalar();
  c.source = required_source(f);
  return c;
}

// Reads a mapping of NAME -> entry into `out`, refusing duplicate names.
template <typename Map, typename Reader>
void read_named(const std::string& file, const YamlFields& top, const std::string& key, Map& out,
                Reader read) {
  for (const auto& kv : top.mapping(key)) {
    const std::string name = kv.first.Scalar();
    if (out.count(name)) fail("{}: {}.{}: duplicate name", file, key, name);
    out.emplace(name, read(YamlFields(file, key + "." + name, kv.second), name));
  }
  if (out.empty()) fail("{}: {}: is empty", file, key);
}

}  // namespace

Catalog load_catalog(const std::string& path) {
  const YAML::Node root = load_yaml_file(path, "catalog");
  const YamlFields top(path, "", root);
  top.allow_only({"gpus", "nics", "sites", "latencies", "latency_estimate", "link_classes",
                  "communicators", "default_communicator", "compute"});
  Catalog cat;
  cat.path = path;
  read_named(path, top, "gpus", cat.gpus, read_gpu);
  read_named(path, top, "nics", cat.nics, read_nic);
  read_named(path, top, "sites", cat.sites, read_site);
  read_named(path, top, "link_classes", cat.link_classes, read_link_class);
  for (const char* needed : {"pcie", "nvlink", "l2bridge", "l2sts", "switched"})
    if (!cat.link_classes.count(needed)) fail("{}: link_classes: missing class '{}'", path, needed);
  read_named(path, top, "communicators", cat.communicators, read_communicator);
  cat.default_communicator = top.text("default_communicator");
  if (!cat.communicators.count(cat.default_communicator))
    fail("{}: default_communicator '{}' is not in communicators", path, cat.default_communicator);

  const YAML::Node lats = top.sequence_or_empty("latencies");
  std::set<std::pair<std::string, std::string>> seen_pairs;
  for (std::size_t i = 0; i < lats.size(); ++i) {
    const YamlFields f(path, fmt::format("latencies[{}]", i), lats[i]);
    f.allow_only({"a", "b", "rtt_ms", "measured", "source"});
    SiteLatency l;
    l.a = f.text("a");
    l.b = f.text("b");
    for (const auto& s : {l.a, l.b})
      if (!cat.sites.count(s)) fail("{}: site '{}' is not in sites", f.field(s == l.a ? "a" : "b"), s);
    if (l.a == l.b) fail("{}: a and b are the same site '{}'", f.field("b"), l.a);
    const auto pair = std::minmax(l.a, l.b);
    if (!seen_pairs.insert({pair.first, pair.second}).second)
      fail("{}: the pair {}-{} is listed twice", f.field("a"), l.a, l.b);
    l.rtt_s = non_negative(f, "rtt_ms") * 1e-3;
    l.measured = f.flag_or("measured", false);
    l.source = required_source(f);
    cat.latencies.push_back(l);
  }

  const YamlFields est(path, "latency_estimate", top.mapping("latency_estimate"));
  est.allow_only({"fibre_fraction_of_c", "route_factor", "switching_allowance_ms", "source"});
  cat.latency_estimate.fibre_fraction_of_c = non_negative(est, "fibre_fraction_of_c", true);
  if (cat.latency_estimate.fibre_fraction_of_c > 1)
    fail("{}: light is not faster than c", est.field("fibre_fraction_of_c"));
  cat.latency_estimate.route_factor = non_negative(est, "route_factor", true);
  if (cat.latency_estimate.route_factor < 1)
    fail("{}: a route is never shorter than the great circle (>= 1)", est.field("route_factor"));
  cat.latency_estimate.switching_allowance_s = non_negative(est, "switching_allowance_ms") * 1e-3;
  cat.latency_estimate.source = required_source(est);

  const YamlFields comp(path, "compute", top.mapping("compute"));
  comp.allow_only({"matmul_efficiency", "memory_efficiency", "kernel_overhead_us",
                   "framework_memory_gib", "source"});
  cat.compute.matmul_efficiency = non_negative(comp, "matmul_efficiency", true);
  cat.compute.memory_efficiency = non_negative(comp, "memory_efficiency", true);
  for (const char* k : {"matmul_efficiency", "memory_efficiency"})
    if (comp.number(k) > 1) fail("{}: a fraction of peak must be at most 1", comp.field(k));
  cat.compute.kernel_overhead_s = non_negative(comp, "kernel_overhead_us") * 1e-6;
  cat.compute.framework_memory_bytes = non_negative(comp, "framework_memory_gib") * kGiB;
  cat.compute.source = required_source(comp);
  return cat;
}

const Catalog& builtin_catalog() {
  static const Catalog catalog = load_catalog(source_dir() + "/platforms/data/catalog.yaml");
  return catalog;
}

}  // namespace fabtrain
