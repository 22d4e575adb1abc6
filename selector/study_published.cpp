#include "selector/study_published.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "common/strict_json.hpp"

namespace fabtrain {

std::string builtin_study_measurement_path() {
  return source_dir() + "/selector/data/fabric-study.json";
}

StudyMeasurement load_study_measurement(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("study measurement {}: cannot be opened", path);
  const nlohmann::json j = parse_json_strict(in, fmt::format("study measurement {}", path));
  const char* const keys[] = {"about",
                              "source",
                              "slice",
                              "rtt_ms",
                              "epochs",
                              "data_parallel_minutes",
                              "pipeshard_minutes",
                              "unstated"};
  if (!j.is_object()) fail("study measurement {}: expected a JSON object", path);
  for (const auto& [key, value] : j.items())
    if (std::find(std::begin(keys), std::end(keys), key) == std::end(keys))
      fail("study measurement {}: unknown key '{}'", path, key);
  auto text = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_string())
      fail("study measurement {}: '{}' must be text", path, key);
    return j[key].get<std::string>();
  };
  auto positive = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() > 0))
      fail("study measurement {}: '{}' must be a positive number", path, key);
    return j[key].get<double>();
  };
  StudyMeasurement m{text("source"),
                     text("slice"),
                     positive("rtt_ms"),
                     positive("epochs"),
                     positive("data_parallel_minutes"),
                     positive("pipeshard_minutes"),
                     {}};
  if (j.contains("unstated")) {
    if (!j["unstated"].is_array()) fail("study measurement {}: 'unstated' must be a list", path);
    for (const auto& u : j["unstated"]) {
      if (!u.is_string()) fail("study measurement {}: 'unstated' must list text", path);
      m.unstated.push_back(u.get<std::string>());
    }
  }
  return m;
}

}  // namespace fabtrain
