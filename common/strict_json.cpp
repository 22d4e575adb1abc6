#include "common/strict_json.hpp"

#include <set>
#include <vector>

#include "common/error.hpp"
#include "common/limits.hpp"

namespace fabtrain {
namespace {

using nlohmann::json;

// A SAX pass that only looks at keys: nlohmann's callback parser would do, but it scans the
// enclosing array at the end of every object, quadratic in a list of many objects.
class DuplicateKeys : public nlohmann::json_sax<json> {
 public:
  explicit DuplicateKeys(std::string_view what) : what_(what) {}
  bool start_object(std::size_t) override { return open_.emplace_back(), true; }
  bool end_object() override { return open_.pop_back(), true; }
  bool key(string_t& k) override {
    if (!open_.back().insert(k).second) fail("{}: key '{}' appears twice in one object", what_, k);
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  // The parse that follows reports the syntax error.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  std::string_view what_;
  std::vector<std::set<std::string>> open_;  // the keys seen in each object being read
};

json parse_checked(const std::string& in, std::string_view what) {
  check_limit(fmt::format("{}: the size in bytes", what), std::int64_t(in.size()),
              limits::json_file_bytes);
  check_json_depth(in, what);
  DuplicateKeys keys(what);
  try {
    json::sax_parse(in, &keys);
    return json::parse(in);
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
    } else if ((c == '[' || c == '{') && ++depth > limits::json_depth.max) {
      const std::string where = lines ? fmt::format(" (line {})", line) : "";
      check_limit(fmt::format("{}: the JSON nesting depth{}", what, where), depth,
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
