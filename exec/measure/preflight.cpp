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
                      {"files", files}};
  return j.dump();
}

RankFacts rank_facts_from_text(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  RankFacts r;
  r.rank = j.at("rank"), r.host = j.at("host"), r.device = j.at("device");
  r.device_error = j.at("device_error"), r.version = j.at("version");
  r.binary_checksum = j.at("binary_checksum");
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
  }
  return out;
}

std::vector<std::vector<std::pair<int, int>>> pair_rounds(int count) {
  const int slots = count % 2 ? count + 1 : count;  // an odd count: one slot pairs with nobody
  std::vector<int> slot(std::size_t(std::max(slots, 0)));
  for (int i = 0; i < slots; ++i) slot[i] = i;
  std::vector<std::vector<std::pair<int, int>>> rounds;
  for (int r = 0; r + 1 < slots; ++r) {
    std::vector<std::pair<int, int>> round;
    for (int i = 0; i < slots / 2; ++i)
      if (slot[i] < count && slot[slots - 1 - i] < count)
        round.push_back(std::minmax(slot[i], slot[slots - 1 - i]));
    if (!round.empty()) rounds.push_back(round);
    std::rotate(slot.begin() + 1, slot.end() - 1, slot.end());  // slot 0 stays, the rest turn
  }
  return rounds;
}

namespace {
std::string pair_name(const LinkFacts& l) {
  return fmt::format("{} - {} (ranks {} and {})", l.vm_a, l.vm_b, l.rank_a, l.rank_b);
}
}  // namespace

std::vector<std::string> link_failures(const std::vector<LinkFacts>& links) {
  std::vector<std::string> out;
  for (const auto& l : links) {
    if (l.expected_rtt_s && l.rtt_s > kRttSlack * *l.expected_rtt_s + 1e-3)
      out.push_back(fmt::format(
          "{}: round trip {:.2f} ms, the slice says {:.2f} ms: another path or interface than "
          "the slice's?",
          pair_name(l), l.rtt_s * 1e3, *l.expected_rtt_s * 1e3));
    if (l.expected_bandwidth && l.bandwidth < kBandwidthFloor * *l.expected_bandwidth)
      out.push_back(fmt::format(
          "{}: a transfer ran at {:.1f} MB/s, under half the slice's {:.1f} MB/s: another path "
          "or interface than the slice's, or a slower link (the prediction assumes the slice's)",
          pair_name(l), l.bandwidth / 1e6, *l.expected_bandwidth / 1e6));
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

std::vector<std::string> link_warnings(const std::vector<LinkFacts>& links) {
  std::vector<std::string> out;
  for (const auto& l : links)
    if (l.expected_rtt_s && l.rtt_s < *l.expected_rtt_s / kRttSlack - 1e-3)
      out.push_back(fmt::format(
          "{}: round trip {:.2f} ms, far below the slice's {:.2f} ms: the prediction for this "
          "pair is pessimistic (probe the slice to use the measured links)",
          pair_name(l), l.rtt_s * 1e3, *l.expected_rtt_s * 1e3));
  return out;
}

namespace {
std::string number_or_dash(bool shown, double v) {
  return shown ? fmt::format("{:.{}f}", v, v < 10 ? 3 : 1) : std::string("-");
}
}  // namespace

std::string preflight_table(const std::vector<RankFacts>& ranks, int width) {
  TextTable table(
      {{"rank", true}, {"host"}, {"device", false, 0, true}, {"version"}, {"binary"}, {"data"}});
  for (const auto& r : ranks) {
    int ok = 0;
    for (const auto& f : r.files) ok += f.error.empty();
    table.add_row({std::to_string(r.rank), r.host,
                   r.device.empty() ? "none: " + r.device_error : r.device, r.version.substr(0, 7),
                   r.binary_checksum.substr(0, 8), fmt::format("{}/{} files", ok, r.files.size())});
  }
  return table.render(width).text;
}

std::string link_table(const std::vector<LinkFacts>& links, int width) {
  TextTable table({{"VM pair", false, 0, true},
                   {"ranks"},
                   {"rtt ms", true},
                   {"slice", true},
                   {"MB/s", true},
                   {"slice", true}});
  for (const auto& l : links)
    table.add_row(
        {l.vm_a + " - " + l.vm_b, fmt::format("{}-{}", l.rank_a, l.rank_b),
         number_or_dash(true, l.rtt_s * 1e3),
         number_or_dash(bool(l.expected_rtt_s), l.expected_rtt_s.value_or(0) * 1e3),
         number_or_dash(true, l.bandwidth / 1e6),
         number_or_dash(bool(l.expected_bandwidth), l.expected_bandwidth.value_or(0) / 1e6)});
  return table.render(width).text;
}

}  // namespace fabtrain
