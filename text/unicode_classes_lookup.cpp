// char_class(): a 64 Ki table for the BMP built once from the generated ranges, binary search
// for the rest (see unicode_classes.hpp).
#include <algorithm>
#include <array>

#include "text/unicode_classes.hpp"

namespace fabtrain::text {
namespace {

bool in_ranges(char32_t cp, const CodePointRange* ranges, std::size_t count) {
  const CodePointRange* end = ranges + count;
  const CodePointRange* it = std::upper_bound(
      ranges, end, cp, [](char32_t c, const CodePointRange& r) { return c < r.first; });
  return it != ranges && cp <= (it - 1)->last;
}

CharClass classify(char32_t cp) {
  if (in_ranges(cp, letter_ranges, letter_range_count)) return CharClass::letter;
  if (in_ranges(cp, number_ranges, number_range_count)) return CharClass::number;
  if (in_ranges(cp, space_ranges, space_range_count)) return CharClass::space;
  return CharClass::other;
}

const std::array<CharClass, 0x10000>& bmp_table() {
  static const auto table = [] {
    std::array<CharClass, 0x10000> t{};
    for (char32_t cp = 0; cp < 0x10000; ++cp) t[cp] = classify(cp);
    return t;
  }();
  return table;
}

}  // namespace

CharClass char_class(char32_t cp) {
  if (cp < 0x10000) return bmp_table()[cp];
  return classify(cp);
}

}  // namespace fabtrain::text
