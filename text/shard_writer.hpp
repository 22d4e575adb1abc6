// Writes llm.c token shards (1024-byte header: magic 20240520, version 1, token count; then
// uint16 tokens): <dir>/<name>_val_NNNNNN.bin from 000000 and <name>_train_NNNNNN.bin from
// 000001, as llm.c's data scripts name them, each holding shard_tokens tokens (the last fewer).
// Every shard goes to a hidden temporary name; commit() renames them all at the end, so an
// error or an interrupt leaves the folder as it was (no half-written shard under a final name,
// no earlier shard overwritten), and the destructor removes the temporaries of an uncommitted run.
// A committed run replaces the earlier shards of its name as a whole (an earlier run's extra
// shards are removed), and the folder is locked while a writer lives: two runs never mix.
#pragma once
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace fabtrain::text {

enum class Split { train, val };

class ShardWriter {
 public:
  ShardWriter(std::string dir, std::string name, std::int64_t shard_tokens);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends tokens to the split, cutting shards at shard_tokens.
  void add(Split split, std::span<const std::uint16_t> tokens);
  // Finishes the open shards and renames every temporary to its final name; returns those names.
  std::vector<std::string> commit();
  std::int64_t tokens(Split split) const { return out_[int(split)].total; }

 private:
  struct Output {
    std::FILE* file = nullptr;
    std::string temp_path, final_path;
    std::int64_t in_shard = 0, total = 0;
    int next_index = 0;
  };
  void open_shard(Split split);
  void close_shard(Split split);
  // NAME_train_NNNNNN.bin or NAME_val_NNNNNN.bin: a shard of this name, of this run or earlier.
  bool is_shard_name(const std::string& file) const;
  void remove_earlier_shards(const std::vector<std::string>& kept);

  std::string dir_, name_;
  std::int64_t shard_tokens_;
  Output out_[2];
  std::vector<std::pair<std::string, std::string>> closed_;  // temp -> final
  bool committed_ = false;
  int lock_ = -1;  // the folder, locked while this writer lives
};

}  // namespace fabtrain::text
