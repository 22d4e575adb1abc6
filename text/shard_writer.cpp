// llm.c token shards through temporaries renamed at commit (see shard_writer.hpp).
#include "text/shard_writer.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"

namespace fabtrain::text {
namespace {

constexpr std::int32_t kTokensMagic = 20240520;
constexpr std::int32_t kTokensVersion = 1;

void write_header(std::FILE* f, const std::string& path, std::int64_t tokens) {
  std::int32_t header[256] = {};
  header[0] = kTokensMagic;
  header[1] = kTokensVersion;
  header[2] = std::int32_t(tokens);
  if (std::fseek(f, 0, SEEK_SET) != 0 || std::fwrite(header, sizeof header, 1, f) != 1)
    fail("{}: write error ({})", path, std::strerror(errno));
}

}  // namespace

ShardWriter::ShardWriter(std::string dir, std::string name, std::int64_t shard_tokens)
    : dir_(std::move(dir)), name_(std::move(name)), shard_tokens_(shard_tokens) {
  if (shard_tokens_ <= 0 || shard_tokens_ > std::int64_t(INT32_MAX))
    fail("--shard-tokens={} must be in 1..{} (the header holds an int32 count)", shard_tokens_,
         INT32_MAX);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) fail("{}: cannot create the folder ({})", dir_, ec.message());
  lock_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_ < 0) fail("{}: cannot open the folder ({})", dir_, std::strerror(errno));
  if (::flock(lock_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_);
    fail("{}: another tokenize is writing into this folder; wait for it or choose another", dir_);
  }
  out_[int(Split::val)].next_index = 0;
  out_[int(Split::train)].next_index = 1;
}

ShardWriter::~ShardWriter() {
  ::close(lock_);  // releases the folder
  if (committed_) return;
  for (Output& o : out_)
    if (o.file) std::fclose(o.file), std::remove(o.temp_path.c_str());
  for (auto& [temp, final_path] : closed_) std::remove(temp.c_str());
}

void ShardWriter::open_shard(Split split) {
  Output& o = out_[int(split)];
  const std::string base =
      fmt::format("{}_{}_{:06d}.bin", name_, split == Split::val ? "val" : "train", o.next_index++);
  o.final_path = dir_ + "/" + base;
  o.temp_path = fmt::format("{}/.{}.tmp-{}", dir_, base, ::getpid());
  o.file = std::fopen(o.temp_path.c_str(), "wb");
  if (!o.file) fail("{}: cannot write ({})", o.temp_path, std::strerror(errno));
  write_header(o.file, o.temp_path, 0);
  o.in_shard = 0;
}

void ShardWriter::close_shard(Split split) {
  Output& o = out_[int(split)];
  write_header(o.file, o.temp_path, o.in_shard);
  const bool ok = std::fflush(o.file) == 0 && ::fsync(fileno(o.file)) == 0;
  std::fclose(o.file);
  o.file = nullptr;
  if (!ok) fail("{}: write error ({})", o.temp_path, std::strerror(errno));
  closed_.emplace_back(o.temp_path, o.final_path);
}

void ShardWriter::add(Split split, std::span<const std::uint16_t> tokens) {
  Output& o = out_[int(split)];
  while (!tokens.empty()) {
    if (!o.file) open_shard(split);
    const std::size_t n = std::size_t(
        std::min<std::int64_t>(std::int64_t(tokens.size()), shard_tokens_ - o.in_shard));
    if (std::fwrite(tokens.data(), sizeof(std::uint16_t), n, o.file) != n)
      fail("{}: write error ({})", o.temp_path, std::strerror(errno));
    o.in_shard += std::int64_t(n);
    o.total += std::int64_t(n);
    tokens = tokens.subspan(n);
    if (o.in_shard == shard_tokens_) close_shard(split);
  }
}

std::vector<std::string> ShardWriter::commit() {
  for (Split s : {Split::val, Split::train})
    if (out_[int(s)].file) close_shard(s);
  std::vector<std::string> names;
  for (auto& [temp, final_path] : closed_) {
    if (std::rename(temp.c_str(), final_path.c_str()) != 0)
      fail("{}: cannot rename to {} ({})", temp, final_path, std::strerror(errno));
    names.push_back(final_path);
  }
  committed_ = true;
  remove_earlier_shards(names);
  return names;
}

bool ShardWriter::is_shard_name(const std::string& file) const {
  for (const std::string split : {"_train_", "_val_"}) {
    const std::string prefix = name_ + split;
    if (file.size() == prefix.size() + 10 && file.rfind(prefix, 0) == 0 &&
        file.compare(file.size() - 4, 4, ".bin") == 0 &&
        std::all_of(file.begin() + std::ptrdiff_t(prefix.size()), file.end() - 4,
                    [](char c) { return c >= '0' && c <= '9'; }))
      return true;
  }
  return false;
}

void ShardWriter::remove_earlier_shards(const std::vector<std::string>& kept) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string path = dir_ + "/" + entry.path().filename().string();
    if (is_shard_name(entry.path().filename().string()) &&
        std::find(kept.begin(), kept.end(), path) == kept.end())
      std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace fabtrain::text
