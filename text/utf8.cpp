// WHATWG UTF-8 decoding with replacement (https://encoding.spec.whatwg.org/#utf-8-decoder),
// re-encoded to UTF-8: see utf8.hpp.
#include "text/utf8.hpp"

namespace fabtrain::text {

std::string sanitize_utf8(std::string_view in) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  const std::size_t n = in.size();
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      out.push_back(char(c));
      ++i;
      continue;
    }
    int need = 0;
    unsigned char lower = 0x80, upper = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lower = 0xA0;
      if (c == 0xED) upper = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lower = 0x90;
      if (c == 0xF4) upper = 0x8F;  // not above U+10FFFF
    } else {
      out += kReplacement;  // a continuation byte or a byte that never starts a sequence
      ++i;
      continue;
    }
    // The sequence is good as long as each next byte is in range; the first byte out of range
    // ends the maximal subpart (replaced once) and is decoded afresh.
    std::size_t j = i + 1;
    int seen = 0;
    while (seen < need && j < n) {
      const unsigned char b = static_cast<unsigned char>(in[j]);
      if (b < lower || b > upper) break;
      lower = 0x80, upper = 0xBF;
      ++j, ++seen;
    }
    if (seen == need) {
      out.append(in.substr(i, j - i));
    } else {
      out += kReplacement;
    }
    i = j;
  }
  return out;
}

}  // namespace fabtrain::text
