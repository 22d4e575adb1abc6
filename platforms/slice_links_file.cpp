// Replacing a slice file's links section as text (see slice_links_file.hpp).
#include "platforms/slice_links_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace fabtrain {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string number(double v) { return fmt::format("{:.4g}", v); }

std::string link_line(const SiteLink& l) {
  std::string line =
      fmt::format("  - {{sites: [{}, {}], rtt_ms: {}", l.a, l.b, number(l.rtt_s * 1e3));
  if (l.rtt_p90_s >= 0) line += ", rtt_p90_ms: " + number(l.rtt_p90_s * 1e3);
  if (l.bandwidth > 0) line += ", bandwidth_gbit_s: " + number(l.bandwidth * 8 / 1e9);
  if (l.bandwidth_one_stream > 0)
    line += ", bandwidth_one_stream_gbit_s: " + number(l.bandwidth_one_stream * 8 / 1e9);
  if (l.streams > 0) line += fmt::format(", streams: {}", l.streams);
  return line + ", source: " + quoted(l.source) + "}\n";
}

// A line that starts a top-level key (not indented, not a comment, not a list item).
bool top_level_key(const std::string& line) {
  return !line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && line[0] != '-' &&
         line.find(':') != std::string::npos;
}

}  // namespace

std::string with_links(const std::string& text, const std::vector<SiteLink>& links) {
  std::istringstream in(text);
  std::string out, line;
  bool in_links = false;
  while (std::getline(in, line)) {
    if (top_level_key(line)) in_links = line.rfind("links:", 0) == 0;
    if (!in_links) out += line + "\n";
  }
  if (links.empty()) return out;
  out += "links:\n";
  for (const auto& l : links) out += link_line(l);
  return out;
}

void write_slice_links(const std::string& slice_path, const std::vector<SiteLink>& links,
                       const std::string& output, const Catalog& catalog) {
  std::ifstream in(slice_path);
  if (!in) fail("cannot read slice file '{}'", slice_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!(out << with_links(text.str(), links))) fail("cannot write '{}'", tmp);
  }
  try {
    load_slice(tmp, catalog);
  } catch (const Error& e) {
    std::filesystem::remove(tmp);
    fail("{}: the slice with the measured links is not valid: {}", slice_path, e.what());
  }
  std::filesystem::rename(tmp, output);
}

}  // namespace fabtrain
