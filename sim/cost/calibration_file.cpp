// YAML text of a calibration (see calibration_file.hpp).
#include "sim/cost/calibration_file.hpp"

#include <fstream>

#include "common/atomic_file.hpp"
#include "common/error.hpp"

namespace fabtrain {
namespace {

// 17 significant digits: the file reads back to the same doubles.
std::string item(const char* key, const std::optional<double>& v) {
  return v ? fmt::format("{}: {:.17g}", key, *v) : std::string();
}

std::string flow(std::initializer_list<std::string> items) {
  std::string s;
  for (const auto& i : items)
    if (!i.empty()) s += (s.empty() ? "" : ", ") + i;
  return "{" + s + "}";
}

}  // namespace

std::string calibration_yaml(const Calibration& cal, const std::vector<std::string>& comments) {
  std::string out;
  for (const auto& c : comments) out += "# " + c + "\n";
  if (!cal.compute.empty()) {
    out += "compute:\n";
    for (const auto& [device, kinds] : cal.compute) {
      out += fmt::format("  {}:\n", device);
      for (const auto& [kind, c] : kinds)
        out += fmt::format("    {}: {}\n", to_string(kind),
                           flow({item("matmul_efficiency", c.matmul_efficiency),
                                 item("memory_efficiency", c.memory_efficiency),
                                 item("kernel_overhead_s", c.kernel_overhead_s)}));
    }
  }
  if (!cal.links.empty()) {
    out += "links:\n";
    for (const auto& [name, l] : cal.links)
      out += fmt::format("  {}: {}\n", name,
                         flow({item("latency_s", l.latency_s), item("bandwidth", l.bandwidth),
                               item("tcp_window_bytes", l.tcp_window_bytes)}));
  }
  if (!cal.collectives.empty()) {
    out += "collectives:\n";
    for (const auto& [op, c] : cal.collectives)
      out += fmt::format("  {}: {}\n", to_string(op),
                         flow({item("latency_terms", c.latency_terms),
                               item("bandwidth_factor", c.bandwidth_factor),
                               item("overhead_s", c.overhead_s), item("small_bytes", c.small_bytes),
                               item("small_latency_terms", c.small_latency_terms)}));
  }
  if (cal.held_out_step_error)
    out += fmt::format(
        "# mean absolute step error of the runs, each predicted by a fit on the "
        "others\n{}\n",
        item("held_out_step_error", cal.held_out_step_error));
  if (cal.p2p)
    out += fmt::format("p2p: {}\n", flow({item("latency_terms", cal.p2p->latency_terms),
                                          item("overhead_s", cal.p2p->overhead_s)}));
  return out;
}

void write_calibration(const Calibration& cal, const std::vector<std::string>& comments,
                       const std::string& path) {
  write_text_atomically(path, calibration_yaml(cal, comments), "-o");
}

}  // namespace fabtrain
