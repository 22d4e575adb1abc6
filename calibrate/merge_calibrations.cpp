// Merging calibrations per GPU type and link class (see merge_calibrations.hpp).
#include "calibrate/merge_calibrations.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "common/error.hpp"

namespace fabtrain::calib {
namespace {

bool same(const ComputeCalibration& a, const ComputeCalibration& b) {
  return a.matmul_efficiency == b.matmul_efficiency && a.memory_efficiency == b.memory_efficiency &&
         a.kernel_overhead_s == b.kernel_overhead_s;
}
bool same(const LinkCalibration& a, const LinkCalibration& b) {
  return a.latency_s == b.latency_s && a.bandwidth == b.bandwidth &&
         a.tcp_window_bytes == b.tcp_window_bytes;
}
bool same(const CollectiveCalibration& a, const CollectiveCalibration& b) {
  return std::tie(a.latency_terms, a.bandwidth_factor, a.overhead_s, a.small_bytes,
                  a.small_latency_terms) == std::tie(b.latency_terms, b.bandwidth_factor,
                                                     b.overhead_s, b.small_bytes,
                                                     b.small_latency_terms);
}
bool same(const P2pCalibration& a, const P2pCalibration& b) {
  return a.latency_terms == b.latency_terms && a.overhead_s == b.overhead_s;
}

[[noreturn]] void conflict(const std::string& command, const std::string& name,
                           const std::string& first, const std::string& second) {
  fail(
      "{}: {} differs between {} and {}; a merge takes each GPU type's and link "
      "class's entries from one file: remove it from one of them (or fit both on one bench)",
      command, name, first, second);
}

// Puts `value` (from `source`) at `key` of `into`, whose entries came from `sources`; an entry
// already there must be the same.
template <typename Map, typename Key, typename Value>
void put(Map& into, std::map<std::string, std::string>& sources, const Key& key,
         const std::string& name, const Value& value, const std::string& source,
         const std::string& command) {
  const auto it = into.find(key);
  if (it == into.end()) {
    into.emplace(key, value);
    sources[name] = source;
  } else if (!same(it->second, value)) {
    conflict(command, name, sources[name], source);
  }
}

}  // namespace

Calibration merge_calibrations(const std::vector<Calibration>& parts, const std::string& command) {
  Calibration out;
  std::map<std::string, std::string> sources;  // entry name -> the file it came from
  for (const Calibration& part : parts) {
    for (const auto& [gpu, kinds] : part.compute)
      for (const auto& [kind, c] : kinds)
        put(out.compute[gpu], sources, kind, fmt::format("compute.{}.{}", gpu, to_string(kind)), c,
            part.source, command);
    for (const auto& [name, l] : part.links)
      put(out.links, sources, name, "links." + name, l, part.source, command);
    for (const auto& [op, c] : part.collectives)
      put(out.collectives, sources, op, std::string("collectives.") + to_string(op), c, part.source,
          command);
    if (part.p2p && out.p2p && !same(*out.p2p, *part.p2p))
      conflict(command, "p2p", sources["p2p"], part.source);
    if (part.p2p && !out.p2p) out.p2p = part.p2p, sources["p2p"] = part.source;
    if (part.held_out_step_error)
      out.held_out_step_error =
          std::max(out.held_out_step_error.value_or(0.0), *part.held_out_step_error);
    out.source += (out.source.empty() ? "" : " + ") + part.source;
  }
  return out;
}

Calibration load_calibrations(const std::vector<std::string>& paths, const std::string& command) {
  if (paths.size() == 1) return load_calibration(paths[0]);
  std::vector<Calibration> parts;
  for (const auto& path : paths) parts.push_back(load_calibration(path));
  return merge_calibrations(parts, command);
}

std::vector<std::string> merge_comments(const std::vector<Calibration>& parts) {
  std::vector<std::string> lines{"fabtrain calibrate merge: one entry per GPU type and link class"};
  for (const Calibration& part : parts) {
    std::string what;
    for (const auto& [gpu, kinds] : part.compute) what += (what.empty() ? "" : ", ") + gpu;
    for (const auto& [name, l] : part.links) what += (what.empty() ? "" : ", ") + name;
    if (!part.collectives.empty()) what += std::string(what.empty() ? "" : ", ") + "collectives";
    if (part.p2p) what += std::string(what.empty() ? "" : ", ") + "p2p";
    lines.push_back(fmt::format("from {}: {}", part.source, what.empty() ? "nothing" : what));
  }
  if (parts.size() > 0)
    lines.push_back("held_out_step_error: the largest of the files' (the worst fit used)");
  return lines;
}

}  // namespace fabtrain::calib
