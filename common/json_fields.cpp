// Strict JSON fields (see json_fields.hpp).
#include "common/json_fields.hpp"

#include <cstdint>

#include "common/error.hpp"
#include "common/strict_json.hpp"

namespace fabtrain::json_fields {

using nlohmann::json;

void reject_unknown(const json& node, const std::set<std::string>& known, const std::string& where,
                    const std::string& file) {
  if (!node.is_object()) fail("{}: {} must be an object", file, where);
  for (const auto& [key, value] : node.items())
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail("{}: unknown key '{}' in {} (known: {})", file, key, where, list);
    }
}

const json& field(const json& node, const std::string& key, const std::string& where,
                  const std::string& file) {
  if (!node.is_object() || !node.contains(key)) fail("{}: {} has no field '{}'", file, where, key);
  return node.at(key);
}

double number(const json& node, const std::string& key, const std::string& where,
              const std::string& file, double min) {
  const json& v = field(node, key, where, file);
  if (!v.is_number()) fail("{}: {}.{} is not a number", file, where, key);
  const double x = v.get<double>();
  if (!(x >= min)) fail("{}: {}.{}={} must be at least {}", file, where, key, x, min);
  return x;
}

int integer(const json& node, const std::string& key, const std::string& where,
            const std::string& file, int min, int max) {
  return int(json_integer(field(node, key, where, file), fmt::format("{}: {}.{}", file, where, key),
                          min, max));
}

int bounded(const json& node, const std::string& key, const std::string& where,
            const std::string& file, const Limit& limit) {
  const std::string what = fmt::format("{}: {}.{}", file, where, key);
  const std::int64_t v = json_integer(field(node, key, where, file), what, 1, INT64_MAX);
  check_limit(what, v, limit);
  return int(v);
}

std::string text(const json& node, const std::string& key, const std::string& where,
                 const std::string& file) {
  const json& v = field(node, key, where, file);
  if (!v.is_string()) fail("{}: {}.{} is not a string", file, where, key);
  return v.get<std::string>();
}

const json& array(const json& node, const std::string& key, const std::string& where,
                  const std::string& file) {
  const json& v = field(node, key, where, file);
  if (!v.is_array()) fail("{}: {}.{} is not an array", file, where, key);
  return v;
}

}  // namespace fabtrain::json_fields
