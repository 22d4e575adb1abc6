// Checkpoints are checked on load (checksum, finiteness, the
// step they stand for), "latest" is read strictly, a failed write leaves nothing behind, the
// directory is locked and pruned.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/atomic_file.hpp"
#include "exec/model/kernels_layout.hpp"
#include "exec/model/model_file.hpp"
#include "exec/run/checkpoint_dir.hpp"
#include "exec/run/rank_state.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::contains;
using fabtrain::test::error_of;
namespace fs = std::filesystem;

namespace {

ModelSpec nano() { return load_model("gpt2-nano"); }
std::vector<float> params() {
  return std::vector<float>(std::size_t(full_layout(nano()).total), 0.25f);
}

void flip_byte(const std::string& path, std::size_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(at));
  char c = 0;
  f.get(c);
  f.seekp(std::streamoff(at));
  f.put(char(c ^ 0x40));
}

}  // namespace

TEST_CASE("a model checkpoint with NaN, a torn byte or another step's parameters is refused") {
  const test::TempDir dir("fabtrain_ckpt_safety");
  const std::string path = (dir.path() / "model_00000004.bin").string();
  std::vector<float> p = params();
  write_model_checkpoint(path, nano(), p, 4);
  CHECK(read_model_checkpoint(path, nano(), 4) == p);
  CHECK(contains(error_of([&] { read_model_checkpoint(path, nano(), 6); }),
                 "written at step 4, but it stands for step 6"));
  flip_byte(path, 1024 + 40);
  CHECK(contains(error_of([&] { read_model_checkpoint(path, nano()); }), "checksum mismatch"));
  p[17] = std::nanf("");
  write_model_checkpoint(path, nano(), p);  // checksum of the NaN itself: finiteness catches it
  CHECK(contains(error_of([&] { read_model_checkpoint(path, nano()); }), "parameter 17 of"));
  CHECK(contains(error_of([&] { read_model_checkpoint(path, nano()); }), "is nan"));
  CHECK(contains(error_of([&] { read_model_checkpoint(dir.path().string(), nano()); }),
                 "is a directory (give the file inside it"));
}

TEST_CASE("a rank state with NaN moments, a wrong checksum or an absurd length is refused") {
  const test::TempDir dir("fabtrain_state_safety");
  RankState s;
  s.step = 3;
  s.plan = "dp=1";
  s.settings = "seq=64";
  s.adam_m = {1, 2, 3};
  s.adam_v = {1, 2, 3};
  const std::string path = rank_state_path(dir.path().string(), 3, 0);
  write_rank_state(path, s);
  CHECK(read_rank_state(path).settings == "seq=64");
  flip_byte(path, 9);
  CHECK(contains(error_of([&] { read_rank_state(path); }), "checksum mismatch"));
  s.adam_v[1] = INFINITY;
  write_rank_state(path, s);
  CHECK(contains(error_of([&] { read_rank_state(path); }), "AdamW v value 1 of 3 is inf"));
}

TEST_CASE("'latest' holds a whole step and nothing else") {
  const test::TempDir dir("fabtrain_latest");
  for (const char* text : {"4abc\n", "04\n", "-1\n", "\n", "4 5\n"}) {
    CAPTURE(text);
    std::ofstream(dir.path() / "latest") << text;
    CHECK(contains(error_of([&] { read_latest_step(dir.path().string()); }), "'latest'"));
  }
  std::ofstream(dir.path() / "latest") << "4\n";
  CHECK(read_latest_step(dir.path().string()) == 4);
}

TEST_CASE("a write that fails is an error, leaves no temporary file and keeps the old file") {
  const test::TempDir dir("fabtrain_atomic");
  const std::string path = (dir.path() / "out.json").string();
  write_text_atomically(path, "old\n");
  std::string message;
  {
    const test::FileSizeCap full_disk(4096);
    message = error_of([&] { write_text_atomically(path, std::string(1 << 20, 'x'), "--json"); });
  }
  CHECK(contains(message, "--json " + path + ": write failed"));
  std::ifstream in(path);
  std::string kept;
  std::getline(in, kept);
  CHECK(kept == "old");
  for (const auto& entry : fs::directory_iterator(dir.path()))
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
  CHECK(contains(error_of([&] { write_text_atomically(dir.path().string(), "x"); }),
                 "is a directory"));
  CHECK(contains(
      error_of([&] { write_text_atomically((dir.path() / "no/such/dir.json").string(), "x"); }),
      "cannot write"));
}

TEST_CASE("the checkpoint directory is locked by one job and pruned to the newest") {
  const test::TempDir dir("fabtrain_ckpt_dir");
  const std::string d = dir.path().string();
  {
    CheckpointLock lock(d);
    CHECK(contains(error_of([&] { CheckpointLock second(d); }), "in use by another job (process "));
  }
  std::ofstream(dir.path() / "model_00000002.bin.tmp-999999") << "torn";
  CheckpointLock again(d);                                                // released with the first
  CHECK_FALSE(fs::exists(dir.path() / "model_00000002.bin.tmp-999999"));  // a killed job's write
  for (int step : {2, 4, 6, 8, 10}) {
    std::ofstream(model_checkpoint_path(d, step)) << "m";
    std::ofstream(rank_state_path(d, step, 0)) << "s";
    std::ofstream(rank_state_path(d, step, 1)) << "s";
  }
  prune_checkpoints(d, 3, 0, true);
  CHECK_FALSE(fs::exists(model_checkpoint_path(d, 4)));
  CHECK_FALSE(fs::exists(rank_state_path(d, 2, 0)));
  CHECK(fs::exists(rank_state_path(d, 2, 1)));  // rank 1 prunes its own
  for (int step : {6, 8, 10}) {
    CHECK(fs::exists(model_checkpoint_path(d, step)));
    CHECK(fs::exists(rank_state_path(d, step, 0)));
  }
  prune_checkpoints(d, 0, 1, false);  // 0 keeps all
  CHECK(fs::exists(rank_state_path(d, 2, 1)));
}
