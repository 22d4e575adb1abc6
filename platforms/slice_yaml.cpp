#include "platforms/slice_yaml.hpp"

#include <fmt/format.h>

#include <cctype>

#include "common/atomic_file.hpp"
#include "common/error.hpp"

namespace fabtrain {
namespace {

// A name fablib gives (site, VM, GPU model) is written plain when YAML reads it back as the same
// text; anything else (spaces, punctuation, words YAML reads as booleans or null, numbers) is
// double-quoted with JSON's escapes, which YAML's double quotes read the same.
bool plain_safe(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (const char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
          c == '/'))
      return false;
  for (const char* word : {"y",  "Y",    "n",    "N",    "yes",   "Yes",   "YES",   "no", "No",
                           "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On",
                           "ON", "off",  "Off",  "OFF",  "null",  "Null",  "NULL"})
    if (s == word) return false;
  return true;
}

std::string scalar(const std::string& s) {
  if (plain_safe(s)) return s;
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      out += fmt::format("\\{}", c);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out + "\"";
}

std::string flow_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + scalar(i);
  return "[" + out + "]";
}

// "# text" for every line of text.
std::string comment(const std::string& text, const char* indent) {
  std::string out;
  std::size_t at = 0;
  do {
    const std::size_t end = text.find('\n', at);
    out += fmt::format("{}# {}", out.empty() ? indent : "\n", text.substr(at, end - at));
    at = end == std::string::npos ? end : end + 1;
  } while (at != std::string::npos);
  return out;
}

}  // namespace

std::string to_slice_yaml(const SliceDraft& s) {
  std::string y;
  if (!s.comment.empty()) y += comment(s.comment, "") + "\n";
  y += fmt::format("name: {}\ndescription: {}\n", scalar(s.name), scalar(s.description));
  y += s.assumptions.empty() ? "assumptions: []\n" : "assumptions:\n";
  for (const auto& a : s.assumptions) y += "  - " + scalar(a) + "\n";
  y += s.vms.empty() ? "vms: []\n" : "vms:\n";
  for (std::size_t i = 0; i < s.vms.size(); ++i) {
    const Vm& vm = s.vms[i];
    y += fmt::format("  - {{name: {}, site: {}, gpu: {}, gpus: {}, nic: {}", scalar(vm.name),
                     scalar(vm.site), scalar(vm.gpu), vm.gpus, scalar(vm.nic));
    if (!vm.host.empty()) y += ", host: " + scalar(vm.host);
    if (!vm.address.empty()) y += ", address: " + scalar(vm.address);
    y += "}";
    if (i < s.vm_comments.size() && !s.vm_comments[i].empty()) y += comment(s.vm_comments[i], "  ");
    y += "\n";
  }
  y += s.networks.empty() ? "networks: []\n" : "networks:\n";
  for (const auto& n : s.networks) {
    y += fmt::format("  - {{name: {}, kind: {}", scalar(n.name), scalar(n.kind));
    if (is_two_site_kind(n.kind)) y += ", sites: " + flow_list(n.sites);
    y += ", vms: " + flow_list(n.vms);
    if (!n.subnet.empty()) y += ", subnet: " + scalar(n.subnet);
    if (!n.interface.empty()) y += ", interface: " + scalar(n.interface);
    y += "}\n";
  }
  return y;
}

Slice write_slice(const SliceDraft& draft, const std::string& path, const Catalog& catalog) {
  write_text_atomically(path, to_slice_yaml(draft), "the slice file");
  try {
    return load_slice(path, catalog);
  } catch (const Error& e) {
    fail("{}: the slice written is not valid: {}", path, e.what());
  }
}

}  // namespace fabtrain
