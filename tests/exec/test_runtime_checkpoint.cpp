// Checkpoints: the llm.c model format round-trips and is checked field by field against the
// model; rank state files round-trip; writes are atomic (no temporary file left behind).
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "exec/model/kernels_layout.hpp"
#include "exec/model/model_file.hpp"
#include "exec/run/checkpoint_dir.hpp"
#include "exec/run/rank_state.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::error_of;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  static const test::TempDir dir("fabtrain_ckpt_test");
  return dir.path();
}

ModelSpec nano() { return load_model("gpt2-nano"); }

}  // namespace

TEST_CASE("an llm.c model checkpoint round-trips with the 256-int header") {
  const fs::path dir = temp_dir();
  const ModelSpec m = nano();
  std::vector<float> full(std::size_t(full_layout(m).total));
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = float(i % 1000) * 0.001f - 0.5f;
  const std::string path = (dir / "model.bin").string();
  write_model_checkpoint(path, m, full);
  CHECK(fs::file_size(path) == 1024 + full.size() * 4);
  std::ifstream in(path, std::ios::binary);
  std::int32_t header[8];
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  CHECK(header[0] == 20240326);
  CHECK(header[1] == 3);
  CHECK(header[2] == 128);
  CHECK(header[3] == 256);
  CHECK(header[4] == 2);
  CHECK(header[5] == 4);
  CHECK(header[6] == 64);
  CHECK(header[7] == 256);
  CHECK(read_model_checkpoint(path, m) == full);
  for (const auto& entry : fs::directory_iterator(dir))
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a checkpoint of another shape is refused naming the field and both values") {
  const fs::path dir = temp_dir();
  ModelSpec other = nano();
  other.n_layer = 3;
  const std::string path = (dir / "three.bin").string();
  write_model_checkpoint(path, other, std::vector<float>(std::size_t(full_layout(other).total)));
  CHECK(error_of([&] {
          read_model_checkpoint(path, nano());
        }).find("L (layers) is 3 in the file but 2 in model gpt2-nano") != std::string::npos);
  other = nano();
  other.n_embd = 128;
  write_model_checkpoint(path, other, std::vector<float>(std::size_t(full_layout(other).total)));
  CHECK(error_of([&] { read_model_checkpoint(path, nano()); }).find("C (channels) is 128") !=
        std::string::npos);
  // Truncated: right header, missing tensors.
  write_model_checkpoint(path, nano(), std::vector<float>(std::size_t(full_layout(nano()).total)));
  fs::resize_file(path, 4096);
  CHECK(error_of([&] { read_model_checkpoint(path, nano()); }).find("truncated") !=
        std::string::npos);
  std::ofstream(dir / "junk.bin") << std::string(2000, 'x');
  CHECK(error_of([&] {
          read_model_checkpoint((dir / "junk.bin").string(), nano());
        }).find("wrong magic") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("rank state files and the latest-step marker round-trip") {
  const fs::path dir = temp_dir();
  RankState s;
  s.step = 12;
  s.data_position = 96;
  s.seed = 99;
  s.world = 4;
  s.rank = 3;
  s.plan = "dp=2,tp=1,pp=2";
  s.adam_m = {1.0f, -2.5f, 3.25f};
  s.adam_v = {0.5f, 0.25f, 0.125f};
  const std::string path = rank_state_path(dir.string(), 12, 3);
  write_rank_state(path, s);
  const RankState r = read_rank_state(path);
  CHECK(r.step == 12);
  CHECK(r.data_position == 96);
  CHECK(r.seed == 99);
  CHECK(r.world == 4);
  CHECK(r.rank == 3);
  CHECK(r.plan == s.plan);
  CHECK(r.adam_m == s.adam_m);
  CHECK(r.adam_v == s.adam_v);
  fs::resize_file(path, fs::file_size(path) - 4);
  CHECK(error_of([&] { read_rank_state(path); }).find("truncated") != std::string::npos);
  CHECK_FALSE(read_latest_step(dir.string()).has_value());
  write_latest_step(dir.string(), 12);
  CHECK(read_latest_step(dir.string()) == 12);
  fs::remove_all(dir);
}
