#include "exec/measure/bench_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/error.hpp"

namespace fabtrain {
namespace {

double number(const nlohmann::json& j, const char* key, const char* where) {
  if (!j.contains(key) || !j[key].is_number())
    fail("bench file: {} has no number '{}'", where, key);
  return j[key].get<double>();
}

std::string row(const std::string& op, const std::string& group, int ranks, double bytes,
                double seconds, double algbw, double busbw) {
  return fmt::format("{:<15} {:<15} {:>5} {:>12.0f} {:>12.0f} {:>6} {:>12.1f} {:>8.3f} {:>8.3f}\n",
                     op, group, ranks, bytes, bytes / 4, "float", seconds * 1e6, algbw / 1e9,
                     busbw / 1e9);
}

}  // namespace

std::string bench_table(const nlohmann::json& b) {
  std::string out =
      fmt::format("{:<15} {:<15} {:>5} {:>12} {:>12} {:>6} {:>12} {:>8} {:>8}\n", "# collective",
                  "group", "ranks", "size (B)", "count", "type", "time (us)", "algbw", "busbw");
  out += fmt::format("{:<15} {:<15} {:>5} {:>12} {:>12} {:>6} {:>12} {:>8} {:>8}\n", "#", "", "",
                     "", "(elements)", "", "", "(GB/s)", "(GB/s)");
  for (const auto& c : b.value("collectives", nlohmann::json::array()))
    out += row(c.value("op", "?"), c.value("group", "?"), int(number(c, "ranks", "a collective")),
               number(c, "bytes", "a collective"), number(c, "seconds", "a collective"),
               number(c, "algbw", "a collective"), number(c, "busbw", "a collective"));
  for (const auto& p : b.value("p2p", nlohmann::json::array())) {
    const std::string pair =
        fmt::format("{}-{}", int(number(p, "a", "a pair")), int(number(p, "b", "a pair")));
    const double bytes = number(p, "message_bytes", "a pair") * number(p, "messages", "a pair");
    const double bandwidth = number(p, "bandwidth", "a pair");
    out += row("sendrecv", "ranks " + pair, 2, bytes, bandwidth > 0 ? bytes / bandwidth : 0,
               bandwidth, bandwidth);
    out += fmt::format(
        "{:<15} {:<15} {:>5} {:>12.0f} {:>12.0f} {:>6} {:>12.1f}   (round trip "
        "/ 2, p90 {:.1f} us)\n",
        "latency", "ranks " + pair, 2, p.value("latency_bytes", 8.0),
        p.value("latency_bytes", 8.0) / 4, "float", number(p, "latency_s", "a pair") * 1e6,
        p.value("rtt_p90_s", 0.0) / 2 * 1e6);
  }
  // Compute and memory: the fastest shape and kernel over the ranks, one line each.
  double gemm = 0, memory = 0;
  for (const auto& g : b.value("gemm", nlohmann::json::array()))
    for (const auto& r : g.value("ranks", nlohmann::json::array()))
      gemm = std::max(gemm, r.value("flops_per_s", 0.0));
  for (const auto& m : b.value("memory", nlohmann::json::array()))
    for (const auto& r : m.value("ranks", nlohmann::json::array()))
      memory = std::max(memory, r.value("bytes_per_s", 0.0));
  out += fmt::format(
      "# matrix products: up to {:.1f} GFLOP/s; memory kernels: up to {:.1f} GB/s "
      "(per rank; every shape and rank in the file)\n",
      gemm / 1e9, memory / 1e9);
  return out;
}

}  // namespace fabtrain
