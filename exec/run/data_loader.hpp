// Training and validation data: llm.c token shards (1024-byte header, uint16 tokens) and plain
// text files (each byte one token, vocabulary 256, for gpt2-nano). The files are cut into
// windows of seq+1 tokens (inputs and the targets shifted by one) that never cross a file's end;
// every step takes the next global_batch windows of an order that is shuffled per epoch from the
// seed, so all plans see the same global batch and each data-parallel rank reads only its part.
// Not here: the model, the schedule (the interpreter asks for microbatches by index).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fabtrain {

enum class DataFormat { llmc_tokens, text_bytes };

// One file's tokens, mapped read-only. Checks the llm.c header (magic 20240520, version 1,
// size == 1024 + 2*ntok); any file without that magic that is not a .bin is read as text.
class TokenFile {
 public:
  explicit TokenFile(const std::string& path);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
  const std::string& path() const { return path_; }
  DataFormat format() const { return format_; }
  std::int64_t tokens() const { return tokens_; }
  int token(std::int64_t i) const {
    return format_ == DataFormat::text_bytes ? int(bytes_[i]) : int(tokens16_[i]);
  }
  int max_token() const;  // scans the file
  // Fails, naming the file, when it is shorter than when it was mapped (truncated or rewritten
  // while read): reading the mapping past its new end would end the process with SIGBUS.
  void check_intact() const;

 private:
  std::string path_;
  DataFormat format_ = DataFormat::text_bytes;
  int fd_ = -1;  // kept open to re-check the size
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  const unsigned char* bytes_ = nullptr;
  const std::uint16_t* tokens16_ = nullptr;
  std::int64_t tokens_ = 0;
};

class DataLoader {
 public:
  // Windows of seq+1 tokens from the files; shuffle=false keeps file order (validation).
  // Every token must be below vocab (the model's V), and plain text needs a vocabulary of 256:
  // an Error names the file otherwise.
  DataLoader(const std::vector<std::string>& paths, int seq, int vocab, std::uint64_t seed,
             bool shuffle);
  std::int64_t windows() const { return std::int64_t(window_file_.size()); }
  std::int64_t total_tokens() const { return total_tokens_; }
  const std::vector<std::unique_ptr<TokenFile>>& files() const { return files_; }

  // The inputs and targets (seq each) of global sequence g: the (g mod windows)-th window of
  // epoch g / windows.
  void sequence(std::int64_t g, std::span<int> inputs, std::span<int> targets) const;
  // count sequences starting at global sequence first, concatenated (count*seq each).
  void sequences(std::int64_t first, int count, std::span<int> inputs,
                 std::span<int> targets) const;

 private:
  const std::vector<std::int64_t>& order_of_epoch(std::int64_t epoch) const;

  std::vector<std::unique_ptr<TokenFile>> files_;
  int seq_;
  std::uint64_t seed_;
  bool shuffle_;
  std::int64_t total_tokens_ = 0;
  std::vector<int> window_file_;            // window -> file
  std::vector<std::int64_t> window_start_;  // window -> first token in its file
  mutable std::int64_t cached_epoch_ = -1;
  mutable std::vector<std::int64_t> cached_order_;
};

// A permutation of 0..n-1 that depends only on (seed, epoch): Fisher-Yates driven by splitmix64,
// so it is the same on every machine and standard library.
std::vector<std::int64_t> shuffled_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch);

}  // namespace fabtrain
