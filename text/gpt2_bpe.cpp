// GPT-2 byte-level BPE (see gpt2_bpe.hpp).
#include "text/gpt2_bpe.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/strict_json.hpp"
#include "text/pretokenize.hpp"
#include "text/utf8.hpp"

namespace fabtrain::text {
namespace {

// GPT-2's bytes_to_unicode(): printable bytes stand for themselves, the others for U+0100 on.
std::vector<char32_t> byte_to_char() {
  std::vector<char32_t> map(256, 0);
  std::vector<bool> printable(256, false);
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  int next = 256;
  for (int b = 0; b < 256; ++b) map[b] = printable[b] ? char32_t(b) : char32_t(next++);
  return map;
}

// A token's string in encoder.json (one character per byte, UTF-8) back to its bytes.
std::string string_to_bytes(std::string_view s, const std::vector<int>& char_to_byte,
                            const std::string& path) {
  std::string bytes;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t cp = next_code_point(s, i);
    if (cp >= char_to_byte.size() || char_to_byte[cp] < 0)
      fail("{}: token string \"{}\" holds U+{:04X}, which stands for no byte", path, s,
           unsigned(cp));
    bytes.push_back(char(char_to_byte[cp]));
  }
  return bytes;
}

}  // namespace

Gpt2Bpe::Gpt2Bpe(std::string_view encoder_json, std::string_view vocab_bpe,
                 const std::string& path) {
  const std::vector<char32_t> to_char = byte_to_char();
  std::vector<int> char_to_byte(512, -1);
  for (int b = 0; b < 256; ++b) char_to_byte[to_char[b]] = b;

  const nlohmann::json enc =
      parse_json_strict(std::string(encoder_json), fmt::format("{}/encoder.json", path));
  if (!enc.is_object() || enc.size() > 65536)
    fail("{}/encoder.json: expected an object of at most 65536 token strings", path);
  std::unordered_map<std::string, int> id_of;  // token string (as in the files) -> id
  token_bytes_.resize(enc.size());
  for (auto& [str, id] : enc.items()) {
    if (!id.is_number_integer() || id.get<long>() < 0 || id.get<long>() >= long(enc.size()))
      fail("{}/encoder.json: token \"{}\" has id {}, outside 0..{}", path, str, id.dump(),
           enc.size() - 1);
    token_bytes_[id.get<int>()] = string_to_bytes(str, char_to_byte, path);
    id_of[str] = id.get<int>();
  }
  for (int b = 0; b < 256;
       ++b) {  // the token of the character standing for byte b (UTF-8, < U+0800)
    std::string s;
    const char32_t c = to_char[b];
    if (c < 0x80) {
      s.push_back(char(c));
    } else {
      s.push_back(char(0xC0 | (c >> 6)));
      s.push_back(char(0x80 | (c & 0x3F)));
    }
    auto it = id_of.find(s);
    if (it == id_of.end()) fail("{}/encoder.json: no token for byte {}", path, b);
    byte_token_[b] = std::uint16_t(it->second);
  }

  // vocab.bpe: a version line, then one merge "first second" per line, rank = line - 1; the
  // package reads lines [1, last) of the file split at '\n'.
  std::vector<std::pair<std::string, std::string>> merges;
  std::unordered_map<std::string, std::uint32_t> rank_of_key;  // "first,second" -> rank
  std::size_t line_start = vocab_bpe.find('\n');
  int line_no = 1;
  while (line_start != std::string_view::npos) {
    const std::size_t end = vocab_bpe.find('\n', line_start + 1);
    if (end == std::string_view::npos) break;  // the last line (empty in the published file)
    ++line_no;
    const std::string_view line = vocab_bpe.substr(line_start + 1, end - line_start - 1);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || line.find(' ', space + 1) != std::string_view::npos)
      fail("{}/vocab.bpe:{}: expected \"first second\", got \"{}\"", path, line_no, line);
    std::string a(line.substr(0, space)), b(line.substr(space + 1));
    if (!id_of.count(a) || !id_of.count(b) || !id_of.count(a + b))
      fail("{}/vocab.bpe:{}: merge \"{}\" names a token that encoder.json lacks", path, line_no,
           line);
    rank_of_key[a + "," + b] = std::uint32_t(merges.size());
    merges.emplace_back(std::move(a), std::move(b));
    line_start = end;
  }
  for (std::uint32_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const std::uint32_t key = std::uint32_t(id_of[a]) << 16 | std::uint32_t(id_of[b]);
    merges_[key] = {rank, std::uint16_t(id_of[a + b])};
  }
  // The package's quirk: any other split of a merge's key at a comma whose two sides are tokens
  // (and whose concatenation is one) gets that merge's rank.
  for (const auto& [key, rank] : rank_of_key) {
    for (std::size_t c = key.find(','); c != std::string::npos; c = key.find(',', c + 1)) {
      const std::string a = key.substr(0, c), b = key.substr(c + 1);
      if (a == merges[rank].first || a.empty() || b.empty()) continue;
      if (!id_of.count(a) || !id_of.count(b) || !id_of.count(a + b)) continue;
      const std::uint32_t pair = std::uint32_t(id_of[a]) << 16 | std::uint32_t(id_of[b]);
      if (!merges_.count(pair)) merges_[pair] = {rank, std::uint16_t(id_of[a + b])};
    }
  }
}

const Gpt2Bpe::Merge* Gpt2Bpe::find_merge(std::uint16_t a, std::uint16_t b) const {
  auto it = merges_.find(std::uint32_t(a) << 16 | b);
  return it == merges_.end() ? nullptr : &it->second;
}

// The package's loop: find the lowest rank among adjacent pairs (the last such pair when several
// share it), merge every occurrence of that pair left to right, repeat until none has a rank.
void Gpt2Bpe::encode_piece(std::string_view bytes, std::vector<std::uint16_t>& out) const {
  std::vector<std::uint16_t> word(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i)
    word[i] = byte_token_[static_cast<unsigned char>(bytes[i])];
  while (word.size() > 1) {
    std::uint32_t best = std::numeric_limits<std::uint32_t>::max();
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      const Merge* m = find_merge(word[i], word[i + 1]);
      if (m && m->rank <= best) best = m->rank, at = i;
    }
    if (best == std::numeric_limits<std::uint32_t>::max()) break;
    const std::uint16_t first = word[at], second = word[at + 1];
    const std::uint16_t merged = find_merge(first, second)->merged;
    std::size_t w = 0;
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
        word[w++] = merged;
        i += 2;
      } else {
        word[w++] = word[i++];
      }
    }
    word.resize(w);
  }
  out.insert(out.end(), word.begin(), word.end());
}

// BPE takes time of the piece's length times the merges it applies, quadratic in a long word
// (4 MB of random letters took minutes), so a piece is merged in parts of at most
// kLongPieceBytes, cut between characters. A longer run of one class differs from the
// reference's tokens at the cuts; words, numbers and punctuation runs of text are far shorter.
void Gpt2Bpe::encode_long_piece(std::string_view piece, std::vector<std::uint16_t>& out) const {
  while (!piece.empty()) {
    std::size_t cut = std::min(piece.size(), kLongPieceBytes);
    while (cut < piece.size() && cut > 1 && (static_cast<unsigned char>(piece[cut]) & 0xC0) == 0x80)
      --cut;  // not inside a UTF-8 sequence
    encode_piece(piece.substr(0, cut), out);
    piece.remove_prefix(cut);
  }
}

void Gpt2Bpe::encode(std::string_view text, std::vector<std::uint16_t>& out, Cache& cache) const {
  const std::string valid = sanitize_utf8(text);
  constexpr std::size_t kCachedPieceBytes = 256, kCacheBytes = 64u << 20;
  pretokenize(valid, [&](std::string_view piece) {
    if (piece.size() == 1) {
      out.push_back(byte_token_[static_cast<unsigned char>(piece[0])]);
      return;
    }
    if (piece.size() > kCachedPieceBytes) {
      encode_long_piece(piece, out);
      return;
    }
    std::string key(piece);
    auto it = cache.pieces.find(key);
    if (it == cache.pieces.end()) {
      if (cache.bytes >= kCacheBytes) cache.pieces.clear(), cache.bytes = 0;
      std::vector<std::uint16_t> ids;
      encode_piece(piece, ids);
      cache.bytes += 3 * key.size() + 64;  // the key, its ids, the node (about)
      it = cache.pieces.emplace(std::move(key), std::move(ids)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  });
}

std::vector<int> Gpt2Bpe::encode(std::string_view text) const {
  Cache cache;
  std::vector<std::uint16_t> ids;
  encode(text, ids, cache);
  return {ids.begin(), ids.end()};
}

std::string Gpt2Bpe::decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) {
    if (id < 0 || id >= vocab_size())
      fail("token id {} is outside the vocabulary of {}", id, vocab_size());
    out += token_bytes_[std::size_t(id)];
  }
  return out;
}

}  // namespace fabtrain::text
