#include "exec/run/checkpoint_dir.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/strict_number.hpp"

namespace fabtrain {

CheckpointLock::CheckpointLock(const std::string& dir)
    : lock_(dir + "/lock", "--checkpoint-dir " + dir, "wait for it to end, or stop its ranks") {
  // Holding the lock, this job is the directory's only writer: a temporary file is a write of an
  // earlier job that was killed midway.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().filename().string().find(".tmp-") != std::string::npos)
      std::filesystem::remove(entry.path(), ec);
}

void refuse_earlier_checkpoints(const std::string& dir) {
  const std::regex checkpoint_re("(model|state)_\\d{8,18}(_rank\\d{5,9})?\\.bin");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, checkpoint_re))
      fail(
          "--checkpoint-dir {}: holds the checkpoints of an earlier run ({}); continue that run "
          "with --resume, or start a new one in another folder (or remove them)",
          dir, name);
  }
}

void prune_checkpoints(const std::string& dir, int keep, int rank, bool root) {
  namespace fs = std::filesystem;
  const std::regex model_re("model_(\\d{8,18})\\.bin");
  const std::regex state_re("state_(\\d{8,18})_rank(\\d{5,9})\\.bin");
  const std::string my_temp = ".tmp-" + std::to_string(::getpid());
  std::set<std::int64_t> steps;
  std::vector<std::pair<std::int64_t, fs::path>> mine;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (name.size() > my_temp.size() &&
        name.compare(name.size() - my_temp.size(), my_temp.size(), my_temp) == 0) {
      fs::remove(entry.path(), ec);  // a write of ours that failed
    } else if (std::regex_match(name, m, model_re)) {
      steps.insert(std::stoll(m.str(1)));
      if (root) mine.emplace_back(std::stoll(m.str(1)), entry.path());
    } else if (std::regex_match(name, m, state_re) && std::stoll(m.str(2)) == rank) {
      mine.emplace_back(std::stoll(m.str(1)), entry.path());
    }
  }
  if (keep <= 0 || int(steps.size()) <= keep) return;
  const std::int64_t oldest_kept = *std::next(steps.rbegin(), keep - 1);
  for (const auto& [step, path] : mine)
    if (step < oldest_kept) fs::remove(path, ec);
}

std::string model_checkpoint_path(const std::string& dir, std::int64_t step) {
  return fmt::format("{}/model_{:08d}.bin", dir, step);
}

std::string rank_state_path(const std::string& dir, std::int64_t step, int rank) {
  return fmt::format("{}/state_{:08d}_rank{:05d}.bin", dir, step, rank);
}

void write_latest_step(const std::string& dir, std::int64_t step) {
  const std::string text = std::to_string(step) + "\n";
  write_text_atomically(dir + "/latest", text, "checkpoint index");
}

std::optional<std::int64_t> read_latest_step(const std::string& dir) {
  std::ifstream in(dir + "/latest");
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string what = fmt::format("checkpoint directory {}: 'latest'", dir);
  const std::int64_t step = strict_integer(text, what);
  if (step < 0) fail("{}: step {} is negative", what, step);
  return step;
}

}  // namespace fabtrain
