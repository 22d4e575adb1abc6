#include "common/strict_json.hpp"

#include <set>
#include <vector>

#include "common/error.hpp"

namespace fabtrain {
namespace {

using nlohmann::json;

template <typename Input>
json parse_checked(Input&& in, std::string_view what) {
  std::vector<std::set<std::string>> open;  // the keys seen in each object being read
  const json::parser_callback_t refuse_duplicates = [&](int, json::parse_event_t event,
                                                        json& parsed) {
    if (event == json::parse_event_t::object_start)
      open.emplace_back();
    else if (event == json::parse_event_t::object_end && !open.empty())
      open.pop_back();
    else if (event == json::parse_event_t::key && !open.empty() &&
             !open.back().insert(parsed.get<std::string>()).second)
      fail("{}: key '{}' appears twice in one object", what, parsed.get<std::string>());
    return true;
  };
  try {
    return json::parse(std::forward<Input>(in), refuse_duplicates);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", what, e.what());
  }
}

}  // namespace

json parse_json_strict(std::istream& in, std::string_view what) { return parse_checked(in, what); }

json parse_json_strict(const std::string& text, std::string_view what) {
  return parse_checked(text, what);
}

std::int64_t json_integer(const json& value, std::string_view what, std::int64_t min,
                          std::int64_t max) {
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
    fail("{}: {} does not fit a 64-bit integer", what, value.dump());
  if (!value.is_number_integer()) fail("{}: {} is not an integer", what, value.dump());
  const std::int64_t v = value.get<std::int64_t>();
  if (v < min || v > max) fail("{}: {} is out of range [{}, {}]", what, v, min, max);
  return v;
}

}  // namespace fabtrain
