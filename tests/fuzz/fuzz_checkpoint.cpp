// libFuzzer target: the binary files the executor reads. The first byte chooses the reader:
// 0 an llm.c model checkpoint (of a tiny model, so that whole files stay small), 1 a rank state
// file, 2 a token file (llm.c shard or text), 3 a checkpoint directory's "latest".
#include "exec/model/model_file.hpp"
#include "exec/run/checkpoint_dir.hpp"
#include "exec/run/data_loader.hpp"
#include "exec/run/rank_state.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

fabtrain::ModelSpec tiny() { return {"tiny", 1, 8, 2, 8, 16}; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fabtrain;
  if (size == 0) return 0;
  const int reader = data[0] % 4;
  const std::string path =
      fuzz::write_input(data + 1, size - 1, reader == 3 ? "latest" : "file.bin");
  fuzz::refused_only_by_error([&] {
    switch (reader) {
      case 0:
        (void)read_model_checkpoint(path, tiny(), 4);
        break;
      case 1:
        (void)read_rank_state(path);
        break;
      case 2: {
        const TokenFile f(path);
        if (f.tokens() > 0) (void)f.max_token();
        break;
      }
      case 3:
        (void)read_latest_step(std::filesystem::path(path).parent_path().string());
        break;
    }
  });
  return 0;
}
