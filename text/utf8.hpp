// UTF-8 as the reference encoder receives it: Node decodes a file's bytes with the WHATWG UTF-8
// decoder, which replaces each maximal invalid subsequence by U+FFFD. sanitize_utf8() does the
// same, so invalid input tokenizes identically; next_code_point() walks text that is valid.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace fabtrain::text {

// The bytes with every invalid sequence replaced as the WHATWG decoder does ("U+FFFD
// substitution of maximal subparts"). Valid input comes back unchanged.
std::string sanitize_utf8(std::string_view bytes);

// Decodes the code point at s[i] of valid UTF-8 and advances i past it.
inline char32_t next_code_point(std::string_view s, std::size_t& i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  const int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  char32_t cp = c & (0x7F >> n);
  for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

}  // namespace fabtrain::text
