// Token files, window cutting and the seeded per-epoch order (see data_loader.hpp).
#include "exec/run/data_loader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/error.hpp"

namespace fabtrain {
namespace {

constexpr std::int32_t kTokenMagic = 20240520;
constexpr std::int64_t kHeaderBytes = 256 * 4;
constexpr int kByteVocabulary = 256;  // plain text: each byte is one token

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

TokenFile::TokenFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("data file {}: cannot open ({})", path, std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  map_size_ = std::size_t(st.st_size);
  if (map_size_ == 0) {
    ::close(fd);
    fail("data file {}: empty file", path);
  }
  map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  fd_ = fd;
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    fail("data file {}: cannot map ({})", path, std::strerror(errno));
  }
  bytes_ = static_cast<const unsigned char*>(map_);
  std::int32_t header[3] = {0, 0, 0};
  if (map_size_ >= sizeof(header)) std::memcpy(header, bytes_, sizeof(header));
  if (header[0] == kTokenMagic) {
    format_ = DataFormat::llmc_tokens;
    if (std::int64_t(map_size_) < kHeaderBytes)
      fail("data file {}: truncated header ({} bytes, an llm.c token file has a {}-byte header)",
           path, map_size_, kHeaderBytes);
    if (header[1] != 1)
      fail("data file {}: version {} in the header, expected 1 (uint16 tokens)", path, header[1]);
    if (header[2] <= 0) fail("data file {}: header says {} tokens (empty data)", path, header[2]);
    const std::int64_t expected = kHeaderBytes + 2 * std::int64_t(header[2]);
    if (std::int64_t(map_size_) != expected)
      fail(
          "data file {}: size {} bytes, but the header's {} tokens need 1024 + 2*{} = {} bytes "
          "(truncated or not an llm.c token file)",
          path, map_size_, header[2], header[2], expected);
    tokens16_ = reinterpret_cast<const std::uint16_t*>(bytes_ + kHeaderBytes);
    tokens_ = header[2];
  } else if (ends_with(path, ".bin")) {
    fail(
        "data file {}: wrong magic {} (an llm.c token file starts with {}); plain text must "
        "not be named .bin",
        path, header[0], kTokenMagic);
  } else {
    format_ = DataFormat::text_bytes;
    tokens_ = std::int64_t(map_size_);
  }
}

TokenFile::~TokenFile() {
  if (map_) ::munmap(map_, map_size_);
  if (fd_ >= 0) ::close(fd_);
}

void TokenFile::check_intact() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || std::size_t(st.st_size) < map_size_)
    fail(
        "data file {}: shrank from {} to {} bytes while the run read it (truncated or rewritten "
        "in place); restore it and continue with --resume",
        path_, map_size_, st.st_size);
}

int TokenFile::max_token() const {
  int m = 0;
  if (format_ == DataFormat::text_bytes) {
    for (std::int64_t i = 0; i < tokens_; ++i) m = std::max(m, int(bytes_[i]));
  } else {
    for (std::int64_t i = 0; i < tokens_; ++i) m = std::max(m, int(tokens16_[i]));
  }
  return m;
}

std::vector<std::int64_t> shuffled_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
  std::vector<std::int64_t> order(n);
  for (std::int64_t i = 0; i < n; ++i) order[i] = i;
  std::uint64_t state = seed * 0x2545F4914F6CDD1Dull + std::uint64_t(epoch) + 1;
  for (std::int64_t i = n - 1; i > 0; --i) {
    const std::int64_t j = std::int64_t(splitmix64(state) % std::uint64_t(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

DataLoader::DataLoader(const std::vector<std::string>& paths, int seq, int vocab,
                       std::uint64_t seed, bool shuffle)
    : seq_(seq), seed_(seed), shuffle_(shuffle) {
  if (seq < 1) fail("sequence length {} must be at least 1", seq);
  for (const std::string& path : paths) {
    auto file = std::make_unique<TokenFile>(path);
    if (file->format() == DataFormat::text_bytes && vocab != kByteVocabulary)
      fail(
          "data file {}: plain text, whose bytes are tokens for a vocabulary of {} only, but the "
          "model has a vocabulary of {}; make token shards first (GPT-2's tokens: fabtrain-exec "
          "tokenize {} -o DIR, then --data 'DIR/corpus_train_*.bin'), or train a byte model "
          "(gpt2-nano)",
          path, kByteVocabulary, vocab, path);
    const int max_token = file->max_token();
    if (max_token >= vocab) {
      std::int64_t at = 0;  // the first one, by position and byte offset, for the user to look at
      while (file->token(at) < vocab) ++at;
      const bool text = file->format() == DataFormat::text_bytes;
      fail(
          "data file {}: token {} is outside the model's vocabulary of {} (the first such token, "
          "{}, "
          "is at position {}, byte offset {}; a {} file for a different tokenizer?)",
          path, max_token, vocab, file->token(at), at, text ? at : 1024 + 2 * at,
          text ? "byte-level text" : "token");
    }
    const std::int64_t n = file->tokens();
    for (std::int64_t start = 0; start + seq + 1 <= n; start += seq) {
      window_file_.push_back(int(files_.size()));
      window_start_.push_back(start);
    }
    total_tokens_ += n;
    files_.push_back(std::move(file));
  }
  if (window_file_.empty())
    fail("data files {}: {} tokens in all, fewer than one sequence of {}+1 tokens",
         paths.empty() ? std::string("(none)") : paths.front(), total_tokens_, seq);
}

const std::vector<std::int64_t>& DataLoader::order_of_epoch(std::int64_t epoch) const {
  if (epoch != cached_epoch_) {
    cached_order_ = shuffled_order(windows(), seed_, epoch);
    cached_epoch_ = epoch;
  }
  return cached_order_;
}

void DataLoader::sequence(std::int64_t g, std::span<int> inputs, std::span<int> targets) const {
  const std::int64_t n = windows();
  const std::int64_t epoch = g / n, position = g % n;
  const std::int64_t window = shuffle_ ? order_of_epoch(epoch)[position] : position;
  const TokenFile& file = *files_[window_file_[window]];
  const std::int64_t start = window_start_[window];
  file.check_intact();
  for (int i = 0; i < seq_; ++i) {
    inputs[i] = file.token(start + i);
    targets[i] = file.token(start + i + 1);
  }
}

void DataLoader::sequences(std::int64_t first, int count, std::span<int> inputs,
                           std::span<int> targets) const {
  for (int k = 0; k < count; ++k)
    sequence(first + k, inputs.subspan(std::size_t(k) * seq_, seq_),
             targets.subspan(std::size_t(k) * seq_, seq_));
}

}  // namespace fabtrain
