// Link-class fit (see fit_links.hpp).
#include "calibrate/fit_links.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/human_units.hpp"

namespace fabtrain::calib {

LinkFit fit_link(const std::vector<BenchData>& benches, const LinkClass& cls, int streams_per_peer,
                 double path_rtt_s) {
  if (!(path_rtt_s >= 0)) fail("--path-rtt-ms must not be negative");
  LinkFit fit;
  std::vector<PairSample> pairs;
  for (const auto& b : benches) {
    const auto across = pairs_across_hosts(b);
    pairs.insert(pairs.end(), across.begin(), across.end());
  }
  if (pairs.empty()) {
    fit.notes.push_back("no bench has two ranks: the link class keeps the catalog's parameters");
    return fit;
  }
  fit.measured = true;
  const auto shortest = *std::min_element(pairs.begin(), pairs.end(),
                                          [](auto& x, auto& y) { return x.rtt_s < y.rtt_s; });
  const double latency = shortest.rtt_s / 2 - path_rtt_s / 2;
  if (latency < 0)
    fit.notes.push_back(
        fmt::format("the shortest round trip {:.3g} ms is under --path-rtt-ms {:.3g}: latency 0",
                    shortest.rtt_s * 1e3, path_rtt_s * 1e3));
  fit.link.latency_s = std::max(0.0, latency);
  double top = 0;
  for (const auto& p : pairs) top = std::max(top, p.bandwidth);
  fit.link.bandwidth = top;
  std::vector<double> windows;
  double longest_full_rtt = 0;
  for (const auto& p : pairs) {
    if (p.bandwidth < kWindowLimitedFraction * top)
      windows.push_back(p.bandwidth * p.rtt_s);
    else
      longest_full_rtt = std::max(longest_full_rtt, p.rtt_s);
  }
  fit.window_limited_pairs = int(windows.size());
  const int streams = std::max(1, streams_per_peer);
  if (!windows.empty()) {
    std::sort(windows.begin(), windows.end());
    const double window = windows[windows.size() / 2];
    fit.link.tcp_window_bytes = window / streams;
    fit.notes.push_back(fmt::format(
        "{}: bandwidth x RTT = {:.3g} MiB{}", counted(windows.size(), "window-limited pair"),
        window / (1 << 20),
        streams > 1 ? fmt::format(", {} per stream of the communicator's {}",
                                  fmt::format("{:.3g} MiB", window / streams / (1 << 20)), streams)
                    : std::string()));
  } else if (longest_full_rtt >= kLongRoundTripS) {
    fit.link.tcp_window_bytes = 0;
    fit.notes.push_back(fmt::format("full bandwidth at a {:.3g} ms round trip: not window-limited",
                                    longest_full_rtt * 1e3));
  } else {
    fit.notes.push_back(
        "only short round trips were measured: the window is left to the slice or "
        "catalog (bench over the long path too to fit it)");
  }
  return fit;
}

LinkFit fit_link_per_bench(const std::vector<BenchData>& benches, const LinkClass& cls,
                           int streams_per_peer, const std::vector<double>& path_rtt_s) {
  if (path_rtt_s.size() != benches.size())
    fail("{} path round trips given for {} bench files: give one per bench, in the same order",
         path_rtt_s.size(), benches.size());
  LinkFit fit = fit_link(benches, cls, streams_per_peer, 0);
  if (!fit.measured) return fit;
  double latency = -1;
  std::size_t from = 0;
  for (std::size_t i = 0; i < benches.size(); ++i) {
    if (!(path_rtt_s[i] >= 0))
      fail("{}: path round trip {} s must not be negative", benches[i].path, path_rtt_s[i]);
    for (const auto& p : pairs_across_hosts(benches[i])) {
      const double one_way = std::max(0.0, (p.rtt_s - path_rtt_s[i]) / 2);
      if (latency < 0 || one_way < latency) latency = one_way, from = i;
    }
  }
  if (latency >= 0) {
    fit.link.latency_s = latency;
    fit.notes.push_back(fmt::format("latency from {} (its path's round trip {:.3g} ms taken off)",
                                    benches[from].path, path_rtt_s[from] * 1e3));
  }
  return fit;
}

std::optional<double> large_transfer_bandwidth(const BenchData& bench) {
  double largest = 0, message = 0;
  for (const auto& c : bench.collectives) largest = std::max(largest, c.bytes);
  for (const auto& p : bench.pairs) message = std::max(message, p.message_bytes);
  if (!(largest > message)) return std::nullopt;
  std::vector<double> busbw;
  for (const auto& c : bench.collectives)
    if (c.bytes == largest && c.busbw > 0) busbw.push_back(c.busbw);
  if (busbw.empty()) return std::nullopt;
  std::sort(busbw.begin(), busbw.end());
  return busbw[busbw.size() / 2];
}

}  // namespace fabtrain::calib
