#include "common/strict_number.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "common/error.hpp"

namespace fabtrain {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// The text as messages quote it: a value of thousands of characters is cut, with its length.
std::string shown(std::string_view text) {
  if (text.size() <= 40) return std::string(text);
  return fmt::format("{}... ({} characters)", text.substr(0, 24), text.size());
}

}  // namespace

std::int64_t strict_integer(std::string_view text, std::string_view what) {
  const std::size_t digits_at = !text.empty() && text[0] == '-' ? 1 : 0;
  const std::string_view digits = text.substr(digits_at);
  if (digits.empty() ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    fail("{}: '{}' is not an integer (decimal digits only)", what, shown(text));
  if (digits.size() > 1 && digits[0] == '0')
    fail("{}: '{}' has a leading zero (octal is not read; write it without)", what, shown(text));
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec == std::errc::result_out_of_range)
    fail("{}: {} does not fit a 64-bit integer", what, shown(text));
  if (ec != std::errc() || end != text.data() + text.size())
    fail("{}: '{}' is not an integer", what, shown(text));
  return out;
}

int strict_int(std::string_view text, std::string_view what, int min, int max) {
  const std::int64_t v = strict_integer(text, what);
  if (v < min || v > max) fail("{}: {} is out of range [{}, {}]", what, v, min, max);
  return int(v);
}

double strict_finite(std::string_view text, std::string_view what) {
  const std::string l = lower(text);
  const std::string_view body = !l.empty() && (l[0] == '+' || l[0] == '-')
                                    ? std::string_view(l).substr(1)
                                    : std::string_view(l);
  if (body == ".nan" || body == "nan") fail("{}: '{}' is NaN, not a number", what, shown(text));
  if (body == ".inf" || body == "inf" || body == "infinity")
    fail("{}: '{}' is infinite; a finite number is needed", what, shown(text));
  // from_chars takes no leading '+'
  const std::string_view t = !text.empty() && text[0] == '+' ? text.substr(1) : text;
  double out = 0;
  const auto [end, ec] =
      std::from_chars(t.data(), t.data() + t.size(), out, std::chars_format::general);
  if (ec == std::errc::result_out_of_range)
    fail("{}: {} is out of the range of a number", what, shown(text));
  if (t.empty() || ec != std::errc() || end != t.data() + t.size())
    fail("{}: '{}' is not a number", what, shown(text));
  return require_finite(out, what);
}

double require_finite(double value, std::string_view what) {
  if (std::isnan(value)) fail("{}: NaN is not a number", what);
  if (std::isinf(value)) fail("{}: {} is infinite; a finite number is needed", what, value);
  return value;
}

}  // namespace fabtrain
