#include "common/strict_json.hpp"

#include <set>
#include <vector>

#include "common/error.hpp"
#include "common/limits.hpp"

namespace fabtrain {
namespace {

using nlohmann::json;

json parse_checked(const std::string& in, std::string_view what) {
  check_limit(fmt::format("{}: the size in bytes", what), std::int64_t(in.size()),
              limits::json_file_bytes);
  check_json_depth(in, what);
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
    return json::parse(in, refuse_duplicates);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", what, e.what());
  }
}

}  // namespace

json parse_json_strict(std::istream& in, std::string_view what) {
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, std::size_t(in.gcount()));
    check_limit(fmt::format("{}: the size in bytes", what), std::int64_t(text.size()),
                limits::json_file_bytes);
  }
  return parse_checked(text, what);
}

json parse_json_strict(const std::string& text, std::string_view what) {
  return parse_checked(text, what);
}

void check_json_depth(std::string_view text, std::string_view what) {
  const bool lines = text.find('\n') != std::string_view::npos;
  std::int64_t depth = 0, line = 1;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      const std::string where = lines ? fmt::format(" (line {})", line) : "";
      check_limit(fmt::format("{}: the JSON nesting depth{}", what, where), ++depth,
                  limits::json_depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
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
