// The three character classes of GPT-2's pre-tokenizing regex, exactly as JavaScript's /u regexes
// see them (\p{L}, \p{N}, \s), so that the tokenizer splits text where the gpt-3-encoder package
// does. The ranges are generated from Node (scripts/gen-unicode-classes.js); char_class() looks
// them up through a table for the Basic Multilingual Plane and a binary search above it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fabtrain::text {

struct CodePointRange {
  char32_t first, last;
};
extern const CodePointRange letter_ranges[];
extern const std::size_t letter_range_count;
extern const CodePointRange number_ranges[];
extern const std::size_t number_range_count;
extern const CodePointRange space_ranges[];
extern const std::size_t space_range_count;

enum class CharClass : std::uint8_t { other, letter, number, space };

CharClass char_class(char32_t cp);

}  // namespace fabtrain::text
