// GPT-2's pre-tokenizer: splits text into the pieces that BPE encodes one by one, exactly as the
// regex of OpenAI's encoder (and the gpt-3-encoder package) does under JavaScript's /gu flags:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// written out by hand over code points (alternatives tried in order, the first that matches
// wins, as in a backtracking regex engine). Input must be valid UTF-8 (see utf8.hpp).
#pragma once
#include <cstddef>
#include <functional>
#include <string_view>

namespace fabtrain::text {

// Calls piece(bytes) for each piece of text, in order; the pieces concatenate to text.
void pretokenize(std::string_view text, const std::function<void(std::string_view)>& piece);

// A byte offset where every split of the pre-tokenizer starts a new piece, at or after `from`
// (text.size() when there is none): an ASCII space or newline that follows a printable ASCII
// character. Cutting text there and tokenizing the parts gives the same tokens as the whole.
std::size_t next_safe_cut(std::string_view text, std::size_t from);

// Where to cut text into parts of bounded size: the first safe cut in [from, most] when there is
// one, otherwise a hard cut at the character start at or before `most` (then the piece spanning
// it, such as a run of one byte or a word longer than most - from bytes, is encoded as two and
// its tokens there differ from the reference's). text.size() when text ends at or before most.
std::size_t next_cut(std::string_view text, std::size_t from, std::size_t most);

}  // namespace fabtrain::text
