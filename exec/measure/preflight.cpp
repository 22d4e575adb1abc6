#include "exec/measure/preflight.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fabtrain {

FileFacts file_facts(const std::string& path) {
  FileFacts f;
  f.path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    f.error = std::strerror(errno);
    return f;
  }
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64: offset basis and prime
  std::vector<char> buf(1 << 20);
  std::int64_t bytes = 0;
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const std::streamsize n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) h = (h ^ std::uint8_t(buf[i])) * 1099511628211ull;
    bytes += n;
  }
  f.bytes = bytes;
  f.checksum = fmt::format("{:016x}", h);
  return f;
}

std::string to_text(const RankFacts& r) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : r.files)
    files.push_back(
        {{"path", f.path}, {"bytes", f.bytes}, {"checksum", f.checksum}, {"error", f.error}});
  nlohmann::json j = {{"rank", r.rank},       {"host", r.host},
                      {"device", r.device},   {"device_error", r.device_error},
                      {"version", r.version}, {"binary_checksum", r.binary_checksum},
                      {"files", files},       {"rtt_to_rank0_s", r.rtt_to_rank0_s}};
  if (r.expected_rtt_s) j["expected_rtt_s"] = *r.expected_rtt_s;
  j["bandwidth_from_rank0"] = r.bandwidth_from_rank0;
  if (r.expected_bandwidth) j["expected_bandwidth"] = *r.expected_bandwidth;
  return j.dump();
}

RankFacts rank_facts_from_text(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  RankFacts r;
  r.rank = j.at("rank"), r.host = j.at("host"), r.device = j.at("device");
  r.device_error = j.at("device_error"), r.version = j.at("version");
  r.binary_checksum = j.at("binary_checksum"), r.rtt_to_rank0_s = j.at("rtt_to_rank0_s");
  if (j.contains("expected_rtt_s")) r.expected_rtt_s = j.at("expected_rtt_s").get<double>();
  r.bandwidth_from_rank0 = j.at("bandwidth_from_rank0");
  if (j.contains("expected_bandwidth"))
    r.expected_bandwidth = j.at("expected_bandwidth").get<double>();
  for (const auto& f : j.at("files"))
    r.files.push_back({f.at("path"), f.at("bytes"), f.at("checksum"), f.at("error")});
  return r;
}

std::vector<std::string> preflight_failures(const std::vector<RankFacts>& ranks) {
  std::vector<std::string> out;
  if (ranks.empty()) return out;
  const RankFacts& first = ranks.front();
  for (const auto& r : ranks) {
    const std::string who = fmt::format("rank {} ({})", r.rank, r.host);
    if (!r.device_error.empty()) out.push_back(fmt::format("{}: {}", who, r.device_error));
    if (r.version != first.version)
      out.push_back(
          fmt::format("{}: fabtrain {} but rank 0 runs {}", who, r.version, first.version));
    else if (r.binary_checksum != first.binary_checksum)
      out.push_back(fmt::format("{}: fabtrain-exec differs from rank 0's (checksum {} vs {})", who,
                                r.binary_checksum, first.binary_checksum));
    for (std::size_t i = 0; i < r.files.size(); ++i) {
      const FileFacts& f = r.files[i];
      if (!f.error.empty())  // an error may name the file itself already
        out.push_back(f.error.find(f.path) != std::string::npos
                          ? fmt::format("{}: {}", who, f.error)
                          : fmt::format("{}: data file {}: {}", who, f.path, f.error));
      else if (i < first.files.size() && first.files[i].error.empty() &&
               f.checksum != first.files[i].checksum)
        out.push_back(fmt::format("{}: data file {} differs from rank 0's ({} vs {} bytes)", who,
                                  f.path, f.bytes, first.files[i].bytes));
    }
    if (r.expected_rtt_s && r.rtt_to_rank0_s > kRttSlack * *r.expected_rtt_s + 1e-3)
      out.push_back(fmt::format(
          "{}: round trip to rank 0 {:.2f} ms, the slice says {:.2f} ms: another path or "
          "interface than the slice's?",
          who, r.rtt_to_rank0_s * 1e3, *r.expected_rtt_s * 1e3));
  }
  return out;
}

double slice_one_stream_rate(const Slice& slice, const Vm& a, const Vm& b) {
  if (a.site != b.site)
    if (const SiteLink* l = slice.link_between(a.site, b.site); l && l->bandwidth_one_stream > 0)
      return l->bandwidth_one_stream;
  const Network& net = slice.network_between(a.name, b.name);
  const LinkClass& cls = slice.catalog->link_class(net.kind);
  double rate = std::min(slice.catalog->nic(a.nic).bandwidth, slice.catalog->nic(b.nic).bandwidth) *
                cls.efficiency;
  if (const double given = slice.site_bandwidth(net, a.site, b.site).value; given > 0)
    rate = std::min(rate, given);
  const double window = net.tcp_window_bytes >= 0 ? net.tcp_window_bytes : cls.tcp_window_bytes;
  const double rtt =
      a.site != b.site ? slice.site_rtt(net, a.site, b.site).value : 2 * cls.latency_s;
  if (window > 0 && rtt > 0) rate = std::min(rate, window / rtt);
  return rate;
}

std::vector<std::string> preflight_warnings(const std::vector<RankFacts>& ranks) {
  std::vector<std::string> out;
  for (const auto& r : ranks)
    if (r.expected_bandwidth && r.bandwidth_from_rank0 > 0 &&
        r.bandwidth_from_rank0 < kBandwidthFloor * *r.expected_bandwidth)
      out.push_back(fmt::format(
          "rank {} ({}): a transfer from rank 0 ran at {:.1f} MB/s, under half the slice's "
          "{:.1f} MB/s for the pair: another path or interface than the slice's, or a slower "
          "link (the prediction assumes the slice's)",
          r.rank, r.host, r.bandwidth_from_rank0 / 1e6, *r.expected_bandwidth / 1e6));
  return out;
}

std::string preflight_table(const std::vector<RankFacts>& ranks, int width) {
  TextTable table({{"rank", true},
                   {"host"},
                   {"device", false, 0, true},
                   {"version"},
                   {"binary"},
                   {"data"},
                   {"rtt ms", true},
                   {"slice", true},
                   {"MB/s", true},
                   {"slice", true}});
  const auto number = [](bool shown, double v) {
    return shown ? fmt::format("{:.{}f}", v, v < 10 ? 3 : 1) : std::string("-");
  };
  for (const auto& r : ranks) {
    int ok = 0;
    for (const auto& f : r.files) ok += f.error.empty();
    table.add_row({std::to_string(r.rank), r.host,
                   r.device.empty() ? "none: " + r.device_error : r.device, r.version.substr(0, 7),
                   r.binary_checksum.substr(0, 8), fmt::format("{}/{} files", ok, r.files.size()),
                   number(r.rank != 0, r.rtt_to_rank0_s * 1e3),
                   number(bool(r.expected_rtt_s), r.expected_rtt_s.value_or(0) * 1e3),
                   number(r.bandwidth_from_rank0 > 0, r.bandwidth_from_rank0 / 1e6),
                   number(bool(r.expected_bandwidth), r.expected_bandwidth.value_or(0) / 1e6)});
  }
  return table.render(width).text;
}

}  // namespace fabtrain
