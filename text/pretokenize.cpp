// The hand-written GPT-2 pre-tokenizing regex (see pretokenize.hpp).
#include "text/pretokenize.hpp"

#include <vector>

#include "text/unicode_classes.hpp"
#include "text/utf8.hpp"

namespace fabtrain::text {
namespace {

struct Char {
  char32_t cp;
  CharClass cls;
  std::size_t offset;  // byte offset in the text
};

std::vector<Char> decode(std::string_view text) {
  std::vector<Char> chars;
  chars.reserve(text.size() + 1);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    const char32_t cp = next_code_point(text, i);
    chars.push_back({cp, char_class(cp), at});
  }
  chars.push_back({0, CharClass::other, text.size()});  // sentinel: offset of the end
  return chars;
}

// Length in characters of the piece starting at p (n characters in all, sentinel at n).
std::size_t match_at(const std::vector<Char>& c, std::size_t p, std::size_t n) {
  auto run = [&](std::size_t from, CharClass cls) {
    std::size_t e = from;
    while (e < n && c[e].cls == cls) ++e;
    return e;
  };
  // 's 't 're 've 'm 'll 'd
  if (c[p].cp == U'\'' && p + 1 < n) {
    const char32_t a = c[p + 1].cp;
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    if (p + 2 < n) {
      const char32_t b = c[p + 2].cp;
      if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l'))
        return 3;
    }
  }
  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional space, then a run of one class.
  const bool space_first = c[p].cp == U' ' && p + 1 < n;
  for (CharClass cls : {CharClass::letter, CharClass::number, CharClass::other}) {
    if (space_first && c[p + 1].cls == cls) return run(p + 1, cls) - p;
    if (c[p].cls == cls) return run(p, cls) - p;
  }
  // \s+(?!\S): the whitespace run, less its last character when a non-space follows; \s+ when
  // that leaves nothing.
  const std::size_t e = run(p, CharClass::space);
  if (e == n || e - p == 1) return e - p;
  return e - p - 1;
}

}  // namespace

void pretokenize(std::string_view text, const std::function<void(std::string_view)>& piece) {
  const std::vector<Char> chars = decode(text);
  const std::size_t n = chars.size() - 1;
  for (std::size_t p = 0; p < n;) {
    const std::size_t len = match_at(chars, p, n);
    piece(text.substr(chars[p].offset, chars[p + len].offset - chars[p].offset));
    p += len;
  }
}

std::size_t next_safe_cut(std::string_view text, std::size_t from) {
  for (std::size_t i = from < 1 ? 1 : from; i < text.size(); ++i) {
    const char c = text[i], before = text[i - 1];
    if ((c == ' ' || c == '\n') && before > ' ' && before < 0x7F) return i;
  }
  return text.size();
}

std::size_t next_cut(std::string_view text, std::size_t from, std::size_t most) {
  if (most >= text.size()) return text.size();
  const std::size_t safe = next_safe_cut(text.substr(0, most + 1), from);
  if (safe <= most) return safe;
  std::size_t cut = most;  // not inside a UTF-8 sequence (its continuation bytes are 10xxxxxx)
  while (cut > from && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut > 0 ? cut : most;
}

}  // namespace fabtrain::text
