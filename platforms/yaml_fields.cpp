// Strict field reading for the platform YAML files (see yaml_fields.hpp).
#include "platforms/yaml_fields.hpp"

#include <climits>

#include "common/error.hpp"
#include "common/strict_number.hpp"

namespace fabtrain {

YamlFields::YamlFields(std::string file, std::string where, const YamlNode& node)
    : file_(std::move(file)), where_(std::move(where)), node_(node) {
  if (!node_.is_mapping())
    fail("{}: {}: expected a mapping of keys to values, found {}", file_,
         where_.empty() ? "top level" : where_, node_.describe());
}

std::string YamlFields::field(const std::string& key) const {
  return fmt::format("{}: {}{}", file_, where_.empty() ? "" : where_ + ".", key);
}

void YamlFields::allow_only(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : node_.entries()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      fail("{}: unknown key (known keys here: {})", field(key), list);
    }
  }
}

bool YamlFields::has(const std::string& key) const { return bool(node_[key]); }

YamlNode YamlFields::scalar(const std::string& key, const char* expected) const {
  YamlNode n = node_[key];
  if (!n) fail("{}: missing (expected {})", field(key), expected);
  if (!n.is_scalar()) fail("{}: expected {}, found {}", field(key), expected, n.describe());
  return n;
}

std::string YamlFields::text(const std::string& key) const {
  return scalar(key, "a string").text();
}

std::string YamlFields::text_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? text(key) : fallback;
}

double YamlFields::number(const std::string& key) const {
  return strict_finite(scalar(key, "a number").text(), field(key));
}

double YamlFields::number_or(const std::string& key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

int YamlFields::integer(const std::string& key) const {
  return strict_int(scalar(key, "an integer").text(), field(key), INT_MIN, INT_MAX);
}

int YamlFields::integer_or(const std::string& key, int fallback) const {
  return has(key) ? integer(key) : fallback;
}

bool YamlFields::flag_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const std::string t = scalar(key, "true or false").text();
  // YAML 1.1's words for booleans, in the three spellings it allows (true, True, TRUE).
  for (const char* word : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"})
    if (t == word) return true;
  for (const char* word :
       {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"})
    if (t == word) return false;
  fail("{}: expected true or false, found '{}'", field(key), t);
}

std::vector<std::string> YamlFields::text_list_or(const std::string& key) const {
  std::vector<std::string> out;
  YamlNode n = node_[key];
  if (!n) return out;
  if (!n.is_sequence()) fail("{}: expected a list of strings, found {}", field(key), n.describe());
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].is_scalar())
      fail("{}[{}]: expected a string, found {}", field(key), i, n[i].describe());
    out.push_back(n[i].text());
  }
  return out;
}

YamlNode YamlFields::mapping(const std::string& key) const {
  YamlNode n = node_[key];
  if (!n) fail("{}: missing (expected a mapping)", field(key));
  if (!n.is_mapping()) fail("{}: expected a mapping, found {}", field(key), n.describe());
  return n;
}

YamlNode YamlFields::sequence_or_empty(const std::string& key) const {
  YamlNode n = node_[key];
  if (!n || n.is_null()) return YamlNode::empty_sequence();  // "key:" with nothing after
  if (!n.is_sequence()) fail("{}: expected a list, found {}", field(key), n.describe());
  return n;
}

}  // namespace fabtrain
