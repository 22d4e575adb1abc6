// A Plan's text and JSON forms and its name in the study's words. One table of keys drives the
// parser, the printer and the JSON reader, so the three cannot drift apart. Not here: checks
// against a model or a batch (plan.cpp's validate).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/error.hpp"
#include "common/limits.hpp"
#include "common/strict_number.hpp"
#include "plan/plan.hpp"

namespace fabtrain {
namespace {

int parse_int(const std::string& key, const std::string& value) {
  return strict_int(value, fmt::format("plan key '{}'", key), INT_MIN, INT_MAX);
}

int parse_at_least(const std::string& key, const std::string& value, int minimum) {
  const int n = parse_int(key, value);
  if (n < minimum) fail("plan key '{}': {} must be at least {}", key, n, minimum);
  return n;
}

// A degree or a count within [1, its limit].
int parse_bounded(const std::string& key, const std::string& value, const Limit& limit) {
  const int n = parse_at_least(key, value, 1);
  check_limit(fmt::format("plan key '{}'", key), n, limit);
  return n;
}

// "10:14" -> {10, 14}, each entry in [0, limit]
std::vector<int> parse_list(const std::string& key, const std::string& value, const Limit& limit) {
  std::vector<int> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = value.find(':', start);
    const std::string item = value.substr(start, colon - start);
    if (item.empty())
      fail("plan key '{}': '{}' has an empty entry (expected e.g. 10:14)", key, value);
    out.push_back(parse_int(key, item));
    check_limit(fmt::format("plan key '{}': an entry", key), out.back(), limit);
    if (int(out.size()) > limits::ranks.max)
      fail("plan key '{}': more than {} entries (at most one per rank)", key, limits::ranks.max);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\n") - first + 1);
}

struct Key {
  const char* name;
  std::function<void(Plan&, const std::string&)> set;
  std::function<std::string(const Plan&)> print;  // empty string: left out (default)
};

// A key of two words setting a flag, true for the first ("true" and "false" also read for on and
// off); printed always, or left out when the flag is `quiet` (its default, so that plans written
// before the key existed print as they did).
Key flag_key(const char* name, bool Plan::*flag, const char* yes, const char* no,
             std::optional<bool> quiet = std::nullopt) {
  const bool on_off = std::string(yes) == "on";
  return {name,
          [=](Plan& p, const std::string& v) {
            if (v == yes || (on_off && v == "true"))
              p.*flag = true;
            else if (v == no || (on_off && v == "false"))
              p.*flag = false;
            else
              fail("plan key '{}': '{}' is not {} or {}", name, v, yes, no);
          },
          [=](const Plan& p) {
            return quiet && p.*flag == *quiet ? std::string() : std::string(p.*flag ? yes : no);
          }};
}

// Runs `parse` on a key's value; its error names the key.
template <typename Parse>
auto parse_named(const char* key, Parse parse) {
  try {
    return parse();
  } catch (const Error& e) {
    fail("plan key '{}': {}", key, e.what());
  }
}

const std::vector<Key>& keys() {
  static const std::vector<Key> table = {
      {"dp", [](Plan& p, const std::string& v) { p.dp = parse_bounded("dp", v, limits::ranks); },
       [](const Plan& p) { return std::to_string(p.dp); }},
      {"tp", [](Plan& p, const std::string& v) { p.tp = parse_bounded("tp", v, limits::ranks); },
       [](const Plan& p) { return std::to_string(p.tp); }},
      {"pp", [](Plan& p, const std::string& v) { p.pp = parse_bounded("pp", v, limits::ranks); },
       [](const Plan& p) { return std::to_string(p.pp); }},
      {"mb",
       [](Plan& p, const std::string& v) { p.mb = parse_bounded("mb", v, limits::microbatches); },
       [](const Plan& p) { return std::to_string(p.mb); }},
      {"zero",
       [](Plan& p, const std::string& v) {
         p.zero = parse_int("zero", v);
         if (p.zero < 0 || p.zero > 3) fail("plan key 'zero': {} is not a ZeRO stage 0-3", p.zero);
       },
       [](const Plan& p) { return std::to_string(p.zero); }},
      {"schedule",
       [](Plan& p, const std::string& v) {
         if (v == "1f1b")
           p.schedule = PipelineSchedule::one_f_one_b;
         else if (v == "gpipe")
           p.schedule = PipelineSchedule::gpipe;
         else
           fail("plan key 'schedule': '{}' is not a pipeline schedule (1f1b or gpipe)", v);
       },
       [](const Plan& p) { return std::string(to_string(p.schedule)); }},
      flag_key("recompute", &Plan::recompute, "on", "off"),
      {"layers",
       [](Plan& p, const std::string& v) { p.layers = parse_list("layers", v, limits::layers); },
       [](const Plan& p) { return fmt::format("{}", fmt::join(p.layers, ":")); }},
      {"precision",
       [](Plan& p, const std::string& v) {
         p.precision = parse_named("precision", [&] { return parse_precision(v); });
       },
       [](const Plan& p) { return std::string(to_string(p.precision)); }},
      {"attention",
       [](Plan& p, const std::string& v) {
         p.attention = parse_named("attention", [&] { return parse_attention(v); });
       },
       // Left out when naive, so plans written before the key existed print as they did.
       [](const Plan& p) {
         return p.attention == Attention::naive ? std::string()
                                                : std::string(to_string(p.attention));
       }},
      flag_key("overlap", &Plan::overlap, "on", "off", true),
      {"bucket_mib",
       [](Plan& p, const std::string& v) {
         p.bucket_mib = parse_bounded("bucket_mib", v, limits::bucket_mib);
       },
       [](const Plan& p) {
         return p.bucket_mib == Plan{}.bucket_mib ? std::string() : std::to_string(p.bucket_mib);
       }},
      flag_key("vocab", &Plan::vocab_parallel, "parallel", "replicated", false),
      flag_key("p2p", &Plan::pipeline_scatter, "scatter", "whole", false),
      {"devices",
       [](Plan& p, const std::string& v) {
         p.devices =
             parse_list("devices", v, Limit{limits::gpus.max - 1, "GPUs are numbered from 0"});
       },
       [](const Plan& p) { return fmt::format("{}", fmt::join(p.devices, ":")); }},
  };
  return table;
}

const Key& find_key(const std::string& name) {
  for (const auto& k : keys())
    if (name == k.name) return k;
  std::vector<std::string> names;
  for (const auto& k : keys()) names.push_back(k.name);
  fail("unknown plan key '{}' (known: {})", name, fmt::join(names, ", "));
}

// dp*tp*pp in 64 bits, so that Plan::ranks() never overflows an int.
void check_ranks(const Plan& plan) {
  check_limit(fmt::format("plan dp*tp*pp = {}*{}*{}", plan.dp, plan.tp, plan.pp),
              std::int64_t(plan.dp) * plan.tp * plan.pp, limits::ranks);
}

}  // namespace

const char* to_string(PipelineSchedule s) {
  return s == PipelineSchedule::gpipe ? "gpipe" : "1f1b";
}

Plan parse_plan(const std::string& text) {
  Plan plan;
  std::set<std::string> seen;
  std::size_t start = 0;
  const std::string all = trim(text);
  if (all.empty()) return plan;
  while (start <= all.size()) {
    const std::size_t comma = all.find(',', start);
    const std::string item = trim(all.substr(start, comma - start));
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) fail("plan entry '{}' is not key=value (in '{}')", item, text);
    const std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    const Key& k = find_key(key);
    if (!seen.insert(key).second) fail("plan key '{}' given twice (in '{}')", key, text);
    k.set(plan, value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  check_ranks(plan);
  return plan;
}

std::string to_string(const Plan& plan) {
  std::string out;
  for (const auto& k : keys()) {
    const std::string value = k.print(plan);
    if (value.empty()) continue;  // an empty layer split or device order: the default
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", k.name, value);
  }
  return out;
}

void to_json(nlohmann::json& j, const Plan& plan) {
  j = nlohmann::json{{"dp", plan.dp},
                     {"tp", plan.tp},
                     {"pp", plan.pp},
                     {"mb", plan.mb},
                     {"zero", plan.zero},
                     {"schedule", to_string(plan.schedule)},
                     {"recompute", plan.recompute},
                     {"layers", plan.layers},
                     {"precision", to_string(plan.precision)},
                     {"devices", plan.devices}};
  if (plan.attention != Attention::naive) j["attention"] = to_string(plan.attention);
  if (!plan.overlap) j["overlap"] = false;
  if (plan.bucket_mib != Plan{}.bucket_mib) j["bucket_mib"] = plan.bucket_mib;
  if (plan.vocab_parallel) j["vocab"] = "parallel";
  if (plan.pipeline_scatter) j["p2p"] = "scatter";
}

// Each JSON value is turned into its text form and goes through the same setter as the text
// parser, so both forms accept and reject the same values.
void from_json(const nlohmann::json& j, Plan& plan) {
  if (!j.is_object()) fail("a plan in JSON must be an object, got {}", j.dump());
  plan = Plan{};
  for (const auto& [key, value] : j.items()) {
    const Key& k = find_key(key);
    std::string text;
    if (value.is_number_integer()) {
      text = std::to_string(value.get<long long>());
    } else if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_boolean()) {
      text = value.get<bool>() ? "on" : "off";
    } else if (value.is_array()) {
      std::vector<std::string> items;
      for (const auto& item : value) {
        if (!item.is_number_integer())
          fail("plan key '{}': {} is not a list of integers", key, value.dump());
        items.push_back(std::to_string(item.get<long long>()));
      }
      if (items.empty()) continue;  // empty list: the default
      text = fmt::format("{}", fmt::join(items, ":"));
    } else {
      fail("plan key '{}': {} has the wrong type", key, value.dump());
    }
    k.set(plan, text);
  }
  check_ranks(plan);
}

std::string technique_name(const Plan& plan) {
  if (plan.ranks() == 1) return "single GPU";
  if (plan.pp > 1) return "pipeshard";
  std::string data;
  if (plan.dp > 1) data = plan.zero > 0 ? fmt::format("ZeRO-{}", plan.zero) : "data parallel";
  if (plan.tp == 1) return data;
  return data.empty() ? "shard" : data + " + shard";
}

std::string to_short_string(const Plan& plan) {
  std::string text = fmt::format("dp={},tp={},pp={},mb={}", plan.dp, plan.tp, plan.pp, plan.mb);
  if (plan.zero != 0) text += fmt::format(",zero={}", plan.zero);
  if (plan.pp > 1) text += fmt::format(",schedule={}", to_string(plan.schedule));
  if (plan.recompute) text += ",recompute=on";
  if (!plan.layers.empty()) text += fmt::format(",layers={}", fmt::join(plan.layers, ":"));
  if (plan.precision != Precision::fp32)
    text += fmt::format(",precision={}", to_string(plan.precision));
  if (plan.attention != Attention::naive)
    text += fmt::format(",attention={}", to_string(plan.attention));
  if (!plan.overlap) text += ",overlap=off";
  if (plan.bucket_mib != Plan{}.bucket_mib) text += fmt::format(",bucket_mib={}", plan.bucket_mib);
  if (plan.vocab_parallel) text += ",vocab=parallel";
  if (plan.pipeline_scatter) text += ",p2p=scatter";
  return text;
}

}  // namespace fabtrain
