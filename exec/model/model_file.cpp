// llm.c model files (see model_file.hpp).
#include "exec/model/model_file.hpp"

#include <cstring>

#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "exec/model/checked_file.hpp"
#include "exec/model/kernels_layout.hpp"

namespace fabtrain {
namespace {

constexpr std::int32_t kModelMagic = 20240326;
// header[8] of a model file we write: says header[9..10] hold the parameters' checksum and
// header[11..12] the step (llm.c leaves these zero, and its files load without a check).
constexpr std::int32_t kChecksumTag = 0x4b534346;  // "FCSK"

}  // namespace

void write_model_checkpoint(const std::string& path, const ModelSpec& model,
                            std::span<const float> full_parameters, std::int64_t step) {
  const FullLayout layout = full_layout(model);
  if (std::int64_t(full_parameters.size()) != layout.total)
    fail("checkpoint {}: {} parameters given, the model {} has {}", path, full_parameters.size(),
         model.name, layout.total);
  std::vector<char> bytes(256 * 4 + full_parameters.size() * sizeof(float));
  std::int32_t header[256] = {0};
  header[0] = kModelMagic;
  header[1] = 3;
  header[2] = model.n_ctx;
  header[3] = model.vocab_size;
  header[4] = model.n_layer;
  header[5] = model.n_head;
  header[6] = model.n_embd;
  header[7] = model.padded_vocab();
  const std::uint64_t sum = checksum(reinterpret_cast<const char*>(full_parameters.data()),
                                     full_parameters.size() * sizeof(float));
  header[8] = kChecksumTag;
  std::memcpy(&header[9], &sum, sizeof(sum));
  std::memcpy(&header[11], &step, sizeof(step));
  std::memcpy(bytes.data(), header, sizeof(header));
  std::memcpy(bytes.data() + sizeof(header), full_parameters.data(),
              full_parameters.size() * sizeof(float));
  write_file_atomically(path, bytes, "checkpoint");
}

std::vector<float> read_model_checkpoint(const std::string& path, const ModelSpec& model,
                                         std::optional<std::int64_t> step) {
  const std::vector<char> bytes = read_whole_file(path, "checkpoint");
  std::int32_t header[256] = {0};
  if (bytes.size() < sizeof(header))
    fail("checkpoint {}: {} bytes, shorter than the 1024-byte llm.c header", path, bytes.size());
  std::memcpy(header, bytes.data(), sizeof(header));
  if (header[0] != kModelMagic)
    fail("checkpoint {}: wrong magic {} (an llm.c model file starts with {})", path, header[0],
         kModelMagic);
  if (header[1] != 3)
    fail("checkpoint {}: version {}, only 3 (fp32) is supported{}", path, header[1],
         header[1] == 5 ? " (5 is bf16)" : "");
  const struct {
    const char* name;
    int in_file, in_model;
  } fields[] = {{"maxT (context)", header[2], model.n_ctx},
                {"V (vocabulary)", header[3], model.vocab_size},
                {"L (layers)", header[4], model.n_layer},
                {"NH (heads)", header[5], model.n_head},
                {"C (channels)", header[6], model.n_embd}};
  for (const auto& f : fields)
    if (f.in_file != f.in_model)
      fail("checkpoint {}: {} is {} in the file but {} in model {}", path, f.name, f.in_file,
           f.in_model, model.name);
  // llm.c writes Vp; files from older scripts leave it 0 (then Vp is V rounded up to 128).
  if (header[7] != 0 && header[7] != model.padded_vocab())
    fail("checkpoint {}: Vp (padded vocabulary) is {} in the file but {} for model {}", path,
         header[7], model.padded_vocab(), model.name);
  const std::int64_t count = full_layout(model).total;
  const std::size_t expected = sizeof(header) + std::size_t(count) * sizeof(float);
  if (bytes.size() != expected)
    fail("checkpoint {}: {} bytes, but model {} needs 1024 + 4*{} = {} (truncated?)", path,
         bytes.size(), model.name, count, expected);
  if (header[8] == kChecksumTag) {
    std::uint64_t sum = 0;
    std::int64_t written_at = 0;
    std::memcpy(&sum, &header[9], sizeof(sum));
    std::memcpy(&written_at, &header[11], sizeof(written_at));
    if (checksum(bytes.data() + sizeof(header), bytes.size() - sizeof(header)) != sum)
      fail("checkpoint {}: checksum mismatch: the parameters were changed or torn after writing",
           path);
    if (step && written_at >= 0 && written_at != *step)
      fail(
          "checkpoint {}: written at step {}, but it stands for step {} (a file copied from "
          "another step?)",
          path, written_at, *step);
  }
  std::vector<float> full(static_cast<std::size_t>(count));
  if (!full.empty())
    std::memcpy(full.data(), bytes.data() + sizeof(header), full.size() * sizeof(float));
  check_finite(full, path, "parameter");
  return full;
}

}  // namespace fabtrain
