// Strict field reading for the platform YAML files (see yaml_fields.hpp).
#include "platforms/yaml_fields.hpp"

#include <algorithm>
#include <climits>
#include <filesystem>

#include "common/error.hpp"
#include "common/strict_number.hpp"

namespace fabtrain {
namespace {

std::string kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a scalar '" + n.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "undefined";
  }
}

}  // namespace

YamlFields::YamlFields(std::string file, std::string where, const YAML::Node& node)
    : file_(std::move(file)), where_(std::move(where)), node_(node) {
  if (!node_.IsMap())
    fail("{}: {}: expected a mapping of keys to values, found {}", file_,
         where_.empty() ? "top level" : where_, kind_name(node_));
  // yaml-cpp keeps both entries of a repeated key and lookups see only the first: refuse them.
  std::vector<std::string> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar())
      fail("{}: {}: a key must be a plain name, found {}", file_, where_.empty() ? "top level" : where_,
           kind_name(kv.first));
    const std::string key = kv.first.Scalar();
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      fail("{}: duplicate key (it appears twice)", field(key));
    seen.push_back(key);
  }
}

std::string YamlFields::field(const std::string& key) const {
  return fmt::format("{}: {}{}", file_, where_.empty() ? "" : where_ + ".", key);
}

void YamlFields::allow_only(std::initializer_list<const char*> known) const {
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
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

YAML::Node YamlFields::scalar(const std::string& key, const char* expected) const {
  YAML::Node n = node_[key];
  if (!n) fail("{}: missing (expected {})", field(key), expected);
  if (!n.IsScalar()) fail("{}: expected {}, found {}", field(key), expected, kind_name(n));
  return n;
}

std::string YamlFields::text(const std::string& key) const {
  return scalar(key, "a string").Scalar();
}

std::string YamlFields::text_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? text(key) : fallback;
}

double YamlFields::number(const std::string& key) const {
  return strict_finite(scalar(key, "a number").Scalar(), field(key));
}

double YamlFields::number_or(const std::string& key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

int YamlFields::integer(const std::string& key) const {
  return strict_int(scalar(key, "an integer").Scalar(), field(key), INT_MIN, INT_MAX);
}

int YamlFields::integer_or(const std::string& key, int fallback) const {
  return has(key) ? integer(key) : fallback;
}

bool YamlFields::flag_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  YAML::Node n = scalar(key, "true or false");
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    fail("{}: expected true or false, found '{}'", field(key), n.Scalar());
  }
}

std::vector<std::string> YamlFields::text_list_or(const std::string& key) const {
  std::vector<std::string> out;
  YAML::Node n = node_[key];
  if (!n) return out;
  if (!n.IsSequence()) fail("{}: expected a list of strings, found {}", field(key), kind_name(n));
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar())
      fail("{}[{}]: expected a string, found {}", field(key), i, kind_name(n[i]));
    out.push_back(n[i].Scalar());
  }
  return out;
}

YAML::Node YamlFields::mapping(const std::string& key) const {
  YAML::Node n = node_[key];
  if (!n) fail("{}: missing (expected a mapping)", field(key));
  if (!n.IsMap()) fail("{}: expected a mapping, found {}", field(key), kind_name(n));
  return n;
}

YAML::Node YamlFields::sequence_or_empty(const std::string& key) const {
  YAML::Node n = node_[key];
  if (!n || n.IsNull()) return YAML::Node(YAML::NodeType::Sequence);  // "key:" with nothing after
  if (!n.IsSequence()) fail("{}: expected a list, found {}", field(key), kind_name(n));
  return n;
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  if (!std::filesystem::is_regular_file(path)) fail("{} file not found: {}", what, path);
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAllFromFile(path);
  } catch (const YAML::Exception& e) {
    fail("{}: not valid YAML: {}", path, e.what());
  }
  if (documents.size() > 1)
    fail("{}: holds {} YAML documents (separated by ---); a {} file is one", path, documents.size(), what);
  return documents.empty() ? YAML::Node() : documents.front();
}

}  // namespace fabtrain
