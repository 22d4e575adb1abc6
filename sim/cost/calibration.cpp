// Loading a calibration file and merging it over the catalog's compute defaults.
#include "sim/cost/calibration.hpp"

#include <set>

#include "common/error.hpp"
#include "common/strict_number.hpp"
#include "common/yaml_tree.hpp"

namespace fabtrain {

const char* to_string(WorkKind kind) {
  switch (kind) {
    case WorkKind::forward:
      return "forward";
    case WorkKind::backward:
      return "backward";
    case WorkKind::optimizer:
      return "optimizer";
  }
  return "?";
}

namespace {

void reject_unknown(const YamlNode& node, const std::set<std::string>& known,
                    const std::string& where, const std::string& file) {
  if (!node.is_mapping()) fail("{}: {} must be a mapping", file, where);
  for (const auto& kv : node.entries()) {
    const auto key = kv.first;
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail("{}: unknown key '{}' in {} (known: {})", file, key, where, list);
    }
  }
}

std::optional<double> number(const YamlNode& node, const std::string& key, double min, double max,
                             const std::string& where, const std::string& file) {
  if (!node[key]) return std::nullopt;
  if (!node[key].is_scalar()) fail("{}: {}.{} is not a number", file, where, key);
  const double v = strict_finite(node[key].text(), fmt::format("{}: {}.{}", file, where, key));
  if (!(v >= min && v <= max))
    fail("{}: {}.{}={} out of range [{}, {}]", file, where, key, v, min, max);
  return v;
}

// A name under compute or links must be one the catalog knows, or the entry would never apply.
template <typename Map>
void check_known(const Map& known, const std::string& name, const char* kind,
                 const std::string& where, const std::string& file) {
  if (known.count(name)) return;
  std::string list;
  for (const auto& [k, v] : known) list += (list.empty() ? "" : ", ") + k;
  fail("{}: {}: unknown {} '{}' (the catalog knows: {})", file, where, kind, name, list);
}

}  // namespace

Calibration load_calibration(const std::string& path, const Catalog& catalog) {
  const YamlNode root = load_yaml_file(path, "calibration");
  Calibration cal;
  cal.source = path;
  if (root.is_null()) return cal;
  reject_unknown(root, {"compute", "links", "collectives", "p2p", "held_out_step_error"},
                 "the top level", path);
  cal.held_out_step_error = number(root, "held_out_step_error", 0, 10, "the top level", path);
  if (const auto compute = root["compute"]) {
    if (!compute.is_mapping()) fail("{}: compute must map GPU type names to kinds", path);
    for (const auto& gpu : compute.entries()) {
      const auto name = gpu.first;
      check_known(catalog.gpus, name, "GPU type", "compute", path);
      reject_unknown(gpu.second, {"forward", "backward", "optimizer"}, "compute." + name, path);
      for (WorkKind kind : {WorkKind::forward, WorkKind::backward, WorkKind::optimizer}) {
        const auto node = gpu.second[to_string(kind)];
        if (!node) continue;
        const std::string where = "compute." + name + "." + to_string(kind);
        reject_unknown(node, {"matmul_efficiency", "memory_efficiency", "kernel_overhead_s"}, where,
                       path);
        ComputeCalibration c;
        c.matmul_efficiency = number(node, "matmul_efficiency", 1e-6, 1, where, path);
        c.memory_efficiency = number(node, "memory_efficiency", 1e-6, 1, where, path);
        c.kernel_overhead_s = number(node, "kernel_overhead_s", 0, 1, where, path);
        cal.compute[name][kind] = c;
      }
    }
  }
  if (const auto links = root["links"]) {
    if (!links.is_mapping()) fail("{}: links must map link class names to parameters", path);
    for (const auto& link : links.entries()) {
      const auto name = link.first;
      check_known(catalog.link_classes, name, "link class", "links", path);
      const std::string where = "links." + name;
      reject_unknown(link.second, {"latency_s", "bandwidth", "tcp_window_bytes"}, where, path);
      LinkCalibration l;
      l.latency_s = number(link.second, "latency_s", 0, 10, where, path);
      l.bandwidth = number(link.second, "bandwidth", 1, 1e15, where, path);
      l.tcp_window_bytes = number(link.second, "tcp_window_bytes", 0, 1e12, where, path);
      cal.links[name] = l;
    }
  }
  if (const auto collectives = root["collectives"]) {
    reject_unknown(collectives, {"all_reduce", "reduce_scatter", "all_gather"}, "collectives",
                   path);
    for (CollectiveOp op :
         {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
      const auto node = collectives[to_string(op)];
      if (!node) continue;
      const std::string where = std::string("collectives.") + to_string(op);
      reject_unknown(
          node,
          {"latency_terms", "bandwidth_factor", "overhead_s", "small_bytes", "small_latency_terms"},
          where, path);
      const auto terms = number(node, "latency_terms", 1, 1e4, where, path);
      const auto factor = number(node, "bandwidth_factor", 0, 1e3, where, path);
      const auto overhead = number(node, "overhead_s", 0, 10, where, path);
      const auto small_bytes = number(node, "small_bytes", 0, 1e15, where, path);
      const auto small_terms = number(node, "small_latency_terms", 1, 1e4, where, path);
      if (!terms || !factor)
        fail("{}: {} needs both latency_terms and bandwidth_factor", path, where);
      cal.collectives[op] = {*terms, *factor, overhead.value_or(0.0), small_bytes.value_or(0.0),
                             small_terms.value_or(1.0)};
    }
  }
  if (const auto p2p = root["p2p"]) {
    reject_unknown(p2p, {"latency_terms", "overhead_s"}, "p2p", path);
    P2pCalibration c;
    c.latency_terms = number(p2p, "latency_terms", 1, 1e4, "p2p", path).value_or(1.0);
    c.overhead_s = number(p2p, "overhead_s", 0, 10, "p2p", path).value_or(0.0);
    cal.p2p = c;
  }
  return cal;
}

ComputeParameters compute_parameters(const ComputeDefaults& defaults, const Calibration& cal,
                                     const std::string& gpu, WorkKind kind) {
  return calibrated(
      {defaults.matmul_efficiency, defaults.memory_efficiency, defaults.kernel_overhead_s}, cal,
      gpu, kind);
}

ComputeParameters calibrated(ComputeParameters p, const Calibration& cal, const std::string& gpu,
                             WorkKind kind) {
  const auto g = cal.compute.find(gpu);
  if (g == cal.compute.end()) return p;
  const auto k = g->second.find(kind);
  if (k == g->second.end()) return p;
  if (k->second.matmul_efficiency) p.matmul_efficiency = *k->second.matmul_efficiency;
  if (k->second.memory_efficiency) p.memory_efficiency = *k->second.memory_efficiency;
  if (k->second.kernel_overhead_s) p.kernel_overhead_s = *k->second.kernel_overhead_s;
  return p;
}

}  // namespace fabtrain
