// Loads platforms/data/catalog.yaml (or another catalog file) into a Catalog, converting the
// file's units (GiB, TFLOP/s, GB/s, Gbit/s, ms, us, MiB) to bytes, FLOP/s, bytes/s and seconds.
// Rejects unknown keys, wrong types, missing or negative numbers and dangling site names.
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "platforms/catalog.hpp"
#include "platforms/catalog_section.hpp"
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
                "pcie_bandwidth_gb_s", "nvlink_bandwidth_gb_s", "is_cpu", "fp32_matmul_efficiency",
                "sm_count", "source"});
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
  if (f.has("fp32_matmul_efficiency")) {
    g.fp32_matmul_efficiency = non_negative(f, "fp32_matmul_efficiency", true);
    if (g.fp32_matmul_efficiency > 1)
      fail("{}: a fraction of peak must be at most 1", f.field("fp32_matmul_efficiency"));
  }
  g.sm_count = f.integer_or("sm_count", 0);
  if (g.sm_count < 0) fail("{}: must be zero or positive", f.field("sm_count"));
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
  if (s.latitude < -90 || s.latitude > 90)
    fail("{}: {} is not in [-90, 90]", f.field("latitude"), s.latitude);
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

FrameworkMemory read_framework_memory(const YamlFields& f, const std::string& name) {
  f.allow_only({"context_mib", "context_mib_by_gpu", "cublas_workspace_mib", "allocator_slack",
                "data_parallel_gradient_copy", "master_gradients", "loss_gradient_copies",
                "source"});
  FrameworkMemory m;
  m.name = name;
  m.context_bytes = non_negative(f, "context_mib") * kMiB;
  if (f.has("context_mib_by_gpu")) {
    const YamlFields by(f.file(), f.where() + ".context_mib_by_gpu",
                        f.mapping("context_mib_by_gpu"));
    for (const auto& kv : by.node().entries()) {
      const std::string gpu = kv.first;
      m.context_bytes_by_gpu[gpu] = non_negative(by, gpu, true) * kMiB;
    }
  }
  m.cublas_workspace_bytes = non_negative(f, "cublas_workspace_mib") * kMiB;
  m.allocator_slack = non_negative(f, "allocator_slack");
  if (m.allocator_slack >= 1)
    fail("{}: {} is a fraction of the allocated bytes, below 1", f.field("allocator_slack"),
         m.allocator_slack);
  m.data_parallel_gradient_copy = f.flag_or("data_parallel_gradient_copy", false);
  m.master_gradients = f.flag_or("master_gradients", false);
  if (f.has("loss_gradient_copies"))
    m.loss_gradient_copies = non_negative(f, "loss_gradient_copies");
  m.source = required_source(f);
  return m;
}

CollectiveProtocol read_protocol(const YamlFields& f) {
  f.allow_only({"name", "call_latency_us", "step_latency_intra_us", "step_latency_net_us",
                "bandwidth_fraction"});
  CollectiveProtocol p;
  p.name = f.text("name");
  if (p.name.empty()) fail("{}: a protocol needs a name", f.field("name"));
  p.call_latency_s = non_negative(f, "call_latency_us") * 1e-6;
  p.step_latency_intra_s = non_negative(f, "step_latency_intra_us") * 1e-6;
  p.step_latency_net_s = non_negative(f, "step_latency_net_us") * 1e-6;
  p.bandwidth_fraction = non_negative(f, "bandwidth_fraction", true);
  if (p.bandwidth_fraction > 1)
    fail("{}: {} is above 1", f.field("bandwidth_fraction"), p.bandwidth_fraction);
  return p;
}

CommunicatorProfile read_communicator(const YamlFields& f, const std::string& name) {
  f.allow_only({"library", "streams_per_peer", "max_in_flight_mib", "eager_limit_kib",
                "rendezvous_round_trips", "knobs", "protocols", "concurrent_collectives",
                "started_reduce_scatter", "device_buffers", "source"});
  CommunicatorProfile c;
  c.name = name;
  c.library = f.text("library");
  c.streams_per_peer = f.integer("streams_per_peer");
  if (c.streams_per_peer < 1) fail("{}: must be at least 1", f.field("streams_per_peer"));
  c.max_in_flight_bytes = non_negative(f, "max_in_flight_mib") * kMiB;
  c.eager_limit_bytes = non_negative(f, "eager_limit_kib") * 1024;
  c.rendezvous_round_trips = non_negative(f, "rendezvous_round_trips");
  for (const auto& kv : f.mapping("knobs").entries()) c.knobs[kv.first] = kv.second.text();
  c.concurrent_collectives = f.flag_or("concurrent_collectives", false);
  const std::string reduce_scatter = f.text_or("started_reduce_scatter", "ring");
  if (reduce_scatter != "ring" && reduce_scatter != "reduce_then_scatter")
    fail("{}: '{}' is not ring or reduce_then_scatter", f.field("started_reduce_scatter"),
         reduce_scatter);
  c.started_reduce_scatter_via_root = reduce_scatter == "reduce_then_scatter";
  if (f.has("device_buffers")) {
    const YamlFields b(f.file(), f.where() + ".device_buffers", f.mapping("device_buffers"));
    b.allow_only({"channels", "buffsize_mib"});
    c.device_buffer_channels = b.integer("channels");
    if (c.device_buffer_channels < 1) fail("{}: must be at least 1", b.field("channels"));
    c.device_buffer_bytes = non_negative(b, "buffsize_mib", true) * kMiB;
  }
  const YamlNode protocols = f.sequence_or_empty("protocols");
  for (std::size_t i = 0; i < protocols.size(); ++i) {
    const std::string where = f.where() + ".protocols[" + std::to_string(i) + "]";
    if (!protocols[i].is_mapping()) fail("{}: {}: must be a mapping", f.file(), where);
    c.protocols.push_back(read_protocol(YamlFields(f.file(), where, protocols[i])));
    for (std::size_t j = 0; j + 1 < c.protocols.size(); ++j)
      if (c.protocols[j].name == c.protocols.back().name)
        fail("{}: {}: protocol '{}' is listed twice", f.file(), where, c.protocols.back().name);
  }
  c.source = required_source(f);
  return c;
}

// Reads a mapping of NAME -> entry into `out`, refusing names listed twice in this file; an
// overlay replaces an entry of the base by name.
template <typename Map, typename Reader>
void read_named(const YamlFields& top, const std::string& key, Map& out, Reader read) {
  const std::string where = top.where().empty() ? key : top.where() + "." + key;
  std::set<std::string> seen;
  for (const auto& kv : top.mapping(key).entries()) {
    const std::string name = kv.first;
    if (!seen.insert(name).second) fail("{}: {}.{}: duplicate name", top.file(), where, name);
    out.insert_or_assign(name, read(YamlFields(top.file(), where + "." + name, kv.second), name));
  }
  if (seen.empty()) fail("{}: {}: is empty", top.file(), where);
}

std::string sub(const YamlFields& top, const std::string& key) {
  return top.where().empty() ? key : top.where() + "." + key;
}

// framework_memory: {default: NAME, profiles: {NAME: {...}}}; GPU types named per profile must
// be in the catalog.
void read_framework_memory_section(const YamlFields& top, Catalog& cat) {
  const YamlFields f(top.file(), sub(top, "framework_memory"), top.mapping("framework_memory"));
  f.allow_only({"default", "profiles"});
  if (f.has("profiles")) read_named(f, "profiles", cat.framework_memory, read_framework_memory);
  if (f.has("default")) cat.default_framework_memory = f.text("default");
  if (!cat.framework_memory.count(cat.default_framework_memory))
    fail("{}: '{}' is not in profiles", f.field("default"), cat.default_framework_memory);
  for (const auto& [name, m] : cat.framework_memory)
    for (const auto& [gpu, bytes] : m.context_bytes_by_gpu)
      if (!cat.gpus.count(gpu))
        fail("{}: profiles.{}.context_mib_by_gpu: unknown GPU type '{}'", f.field("profiles"), name,
             gpu);
}

void read_latencies(const YamlFields& top, Catalog& cat) {
  const std::string& path = top.file();
  const YamlNode lats = top.sequence_or_empty("latencies");
  std::set<std::pair<std::string, std::string>> seen_pairs;
  for (std::size_t i = 0; i < lats.size(); ++i) {
    const YamlFields f(path, fmt::format("{}[{}]", sub(top, "latencies"), i), lats[i]);
    f.allow_only({"a", "b", "rtt_ms", "measured", "source"});
    SiteLatency l;
    l.a = f.text("a");
    l.b = f.text("b");
    for (const auto& s : {l.a, l.b})
      if (!cat.sites.count(s))
        fail("{}: site '{}' is not in sites", f.field(s == l.a ? "a" : "b"), s);
    if (l.a == l.b) fail("{}: a and b are the same site '{}'", f.field("b"), l.a);
    const auto pair = std::minmax(l.a, l.b);
    if (!seen_pairs.insert({pair.first, pair.second}).second)
      fail("{}: the pair {}-{} is listed twice", f.field("a"), l.a, l.b);
    l.rtt_s = non_negative(f, "rtt_ms") * 1e-3;
    l.measured = f.flag_or("measured", false);
    l.source = required_source(f);
    std::erase_if(cat.latencies,
                  [&](const SiteLatency& old) { return std::minmax(old.a, old.b) == pair; });
    cat.latencies.push_back(l);
  }
}

void read_latency_estimate(const YamlFields& top, Catalog& cat) {
  const YamlFields est(top.file(), sub(top, "latency_estimate"), top.mapping("latency_estimate"));
  est.allow_only({"fibre_fraction_of_c", "route_factor", "switching_allowance_ms", "source"});
  cat.latency_estimate.fibre_fraction_of_c = non_negative(est, "fibre_fraction_of_c", true);
  if (cat.latency_estimate.fibre_fraction_of_c > 1)
    fail("{}: light is not faster than c", est.field("fibre_fraction_of_c"));
  cat.latency_estimate.route_factor = non_negative(est, "route_factor", true);
  if (cat.latency_estimate.route_factor < 1)
    fail("{}: a route is never shorter than the great circle (>= 1)", est.field("route_factor"));
  cat.latency_estimate.switching_allowance_s = non_negative(est, "switching_allowance_ms") * 1e-3;
  cat.latency_estimate.source = required_source(est);
}

void read_compute(const YamlFields& top, Catalog& cat) {
  const std::string& path = top.file();
  const YamlFields comp(path, sub(top, "compute"), top.mapping("compute"));
  comp.allow_only({"matmul_efficiency", "tensor_core_matmul_efficiency", "memory_efficiency",
                   "kernel_overhead_us", "roofline", "matmul_tile", "source"});
  // Optional: max (overlapped, the default) or sum (kernels one after the other).
  const std::string roofline = comp.text_or("roofline", "max");
  if (roofline != "max" && roofline != "sum")
    fail("{}: '{}' is neither max nor sum", comp.field("roofline"), roofline);
  cat.compute.serial_kernels = roofline == "sum";
  cat.compute.matmul_efficiency = non_negative(comp, "matmul_efficiency", true);
  // Optional: without it, tensor-core products reach the same fraction as FP32 ones.
  cat.compute.tensor_core_matmul_efficiency =
      comp.has("tensor_core_matmul_efficiency")
          ? non_negative(comp, "tensor_core_matmul_efficiency", true)
          : cat.compute.matmul_efficiency;
  if (cat.compute.tensor_core_matmul_efficiency > 1)
    fail("{}: a fraction of peak must be at most 1", comp.field("tensor_core_matmul_efficiency"));
  cat.compute.memory_efficiency = non_negative(comp, "memory_efficiency", true);
  for (const char* k : {"matmul_efficiency", "memory_efficiency"})
    if (comp.number(k) > 1) fail("{}: a fraction of peak must be at most 1", comp.field(k));
  cat.compute.kernel_overhead_s = non_negative(comp, "kernel_overhead_us") * 1e-6;
  cat.compute.matmul_tile = comp.integer_or("matmul_tile", 0);
  if (cat.compute.matmul_tile < 0) fail("{}: must be zero or positive", comp.field("matmul_tile"));
  cat.compute.source = required_source(comp);
}

// Reads the sections of a catalog mapping into `cat`. A full catalog (overlay=false) must have
// every section; an overlay may have any of them, and its entries add to or replace the base's.
void read_sections(const YamlFields& top, Catalog& cat, bool overlay) {
  const std::string& path = top.file();
  top.allow_only({"gpus", "nics", "sites", "latencies", "latency_estimate", "link_classes",
                  "communicators", "default_communicator", "compute", "framework_memory"});
  auto wanted = [&](const char* key) { return !overlay || top.has(key); };
  if (wanted("gpus")) read_named(top, "gpus", cat.gpus, read_gpu);
  if (wanted("nics")) read_named(top, "nics", cat.nics, read_nic);
  if (wanted("sites")) read_named(top, "sites", cat.sites, read_site);
  if (wanted("link_classes")) read_named(top, "link_classes", cat.link_classes, read_link_class);
  for (const char* needed : {"pcie", "nvlink", "l2bridge", "l2sts", "switched"})
    if (!cat.link_classes.count(needed)) fail("{}: link_classes: missing class '{}'", path, needed);
  if (wanted("communicators"))
    read_named(top, "communicators", cat.communicators, read_communicator);
  if (wanted("default_communicator")) cat.default_communicator = top.text("default_communicator");
  if (!cat.communicators.count(cat.default_communicator))
    fail("{}: default_communicator '{}' is not in communicators", path, cat.default_communicator);

  if (wanted("framework_memory")) read_framework_memory_section(top, cat);

  read_latencies(top, cat);
  if (wanted("latency_estimate")) read_latency_estimate(top, cat);

  if (wanted("compute")) read_compute(top, cat);
}

}  // namespace

Catalog load_catalog(const std::string& path) {
  const YamlNode root = load_yaml_file(path, "catalog");
  Catalog cat;
  cat.path = path;
  read_sections(YamlFields(path, "", root), cat, false);
  return cat;
}

Catalog extend_catalog(const Catalog& base, const YamlFields& section) {
  Catalog cat = base;
  cat.path =
      base.path + " + " + section.file() + (section.where().empty() ? "" : ":" + section.where());
  read_sections(section, cat, true);
  return cat;
}

Catalog extend_catalog(const Catalog& base, const std::string& path) {
  const YamlNode root = load_yaml_file(path, "catalog");
  return extend_catalog(base, YamlFields(path, "", root));
}

const Catalog& catalog_with(const std::string& extra_path) {
  if (extra_path.empty()) return builtin_catalog();
  static std::map<std::string, std::unique_ptr<const Catalog>> extended;
  auto& slot = extended[extra_path];
  if (!slot) slot = std::make_unique<const Catalog>(extend_catalog(builtin_catalog(), extra_path));
  return *slot;
}

const Catalog& builtin_catalog() {
  static const Catalog catalog = load_catalog(source_dir() + "/platforms/data/catalog.yaml");
  return catalog;
}

}  // namespace fabtrain
