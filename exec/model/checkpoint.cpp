// llm.c model checkpoints, per-rank state files and atomic writes (see checkpoint.hpp).
#include "exec/model/checkpoint.hpp"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/strict_number.hpp"
#include "exec/model/kernels_layout.hpp"

namespace fabtrain {
namespace {

constexpr std::int32_t kModelMagic = 20240326;
constexpr std::int32_t kStateMagic = 20250101;  // ours: fabtrain rank state
// 2: settings and a checksum; 3: under ZeRO, the shards are 1/dp of each gradient bucket (issue
// 13), no longer 1/dp of the whole stage, so a version-2 ZeRO state is refused on resume.
constexpr std::int32_t kStateVersion = 3;
// header[8] of a model file we write: says header[9..10] hold the parameters' checksum and
// header[11..12] the step (llm.c leaves these zero, and its files load without a check).
constexpr std::int32_t kChecksumTag = 0x4b534346;  // "FCSK"

// FNV-1a over bytes: catches a torn or edited file, not an adversary.
std::uint64_t checksum(const char* data, std::size_t n) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ std::uint8_t(data[i])) * 1099511628211ULL;
  return h;
}

// The first non-finite value names its place: a checkpoint of NaN would train on NaN.
void check_finite(std::span<const float> values, const std::string& path, const char* what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      fail("{}: {} {} of {} is {} (the run that wrote it diverged; resume from an earlier step)",
           path, what, i, values.size(), values[i]);
}

std::vector<char> read_whole_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail("{} {}: is a directory (give the file inside it, e.g. {}/model_00000004.bin)", what, path,
         path);
  if (!std::filesystem::is_regular_file(path, ec))
    fail("{} {}: not found (or not a regular file)", what, path);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail("{} {}: cannot open", what, path);
  const std::streamsize size = in.tellg();
  in.seekg(0);
  std::vector<char> bytes(std::size_t(std::max<std::streamsize>(size, 0)));
  if (size > 0 && !in.read(bytes.data(), size)) fail("{} {}: read error", what, path);
  return bytes;
}

// Appends trivially copyable values and arrays to a byte buffer, and reads them back with
// bounds checks naming the file.
struct Writer {
  std::vector<char> bytes;
  template <typename T>
  void put(const T& value) {
    const char* p = reinterpret_cast<const char*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_floats(const std::vector<float>& v) {
    put(std::int64_t(v.size()));
    const char* p = reinterpret_cast<const char*>(v.data());
    bytes.insert(bytes.end(), p, p + v.size() * sizeof(float));
  }
};

struct Reader {
  const std::vector<char>& bytes;
  const std::string& path;
  std::size_t at = 0;
  void need(std::size_t n) {
    if (at + n > bytes.size())
      fail("state file {}: truncated ({} bytes, needs more than {})", path, bytes.size(), at + n);
  }
  template <typename T>
  T get() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return value;
  }
  std::string get_text(const char* what) {
    const auto n = get<std::int64_t>();
    if (n < 0 || n > 65536) fail("state file {}: {} text length {} is out of range", path, what, n);
    need(std::size_t(n));
    std::string out(bytes.data() + at, std::size_t(n));
    at += std::size_t(n);
    return out;
  }
  std::vector<float> get_floats() {
    const auto n = get<std::int64_t>();
    if (n < 0) fail("state file {}: negative array length {}", path, n);
    if (std::uint64_t(n) > (bytes.size() - at) / sizeof(float))
      fail("state file {}: truncated (an array of {} values, {} bytes left)", path, n,
           bytes.size() - at);
    std::vector<float> v(static_cast<std::size_t>(n));
    if (!v.empty()) std::memcpy(v.data(), bytes.data() + at, v.size() * sizeof(float));
    at += v.size() * sizeof(float);
    return v;
  }
};

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

void write_rank_state(const std::string& path, const RankState& s) {
  Writer w;
  w.put(kStateMagic);
  w.put(kStateVersion);
  w.put(s.step);
  w.put(s.data_position);
  w.put(s.seed);
  w.put(std::int32_t(s.world));
  w.put(std::int32_t(s.rank));
  w.put(std::int64_t(s.plan.size()));
  w.bytes.insert(w.bytes.end(), s.plan.begin(), s.plan.end());
  w.put(std::int64_t(s.settings.size()));
  w.bytes.insert(w.bytes.end(), s.settings.begin(), s.settings.end());
  w.put_floats(s.adam_m);
  w.put_floats(s.adam_v);
  w.put(checksum(w.bytes.data(), w.bytes.size()));
  write_file_atomically(path, w.bytes, "state file");
}

RankState read_rank_state(const std::string& path) {
  const std::vector<char> bytes = read_whole_file(path, "state file");
  if (bytes.size() < 16) fail("state file {}: truncated ({} bytes)", path, bytes.size());
  Reader r{bytes, path};
  const auto magic = r.get<std::int32_t>();
  if (magic != kStateMagic)
    fail("state file {}: wrong magic {} (expected {})", path, magic, kStateMagic);
  const auto version = r.get<std::int32_t>();
  if (version != kStateVersion && version != 2)
    fail("state file {}: version {}, expected 2 or {}", path, version, kStateVersion);
  std::uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + bytes.size() - sizeof(sum), sizeof(sum));
  if (checksum(bytes.data(), bytes.size() - sizeof(sum)) != sum)
    fail("state file {}: checksum mismatch: truncated, torn or changed after writing", path);
  RankState s;
  s.version = version;
  s.step = r.get<std::int64_t>();
  s.data_position = r.get<std::int64_t>();
  s.seed = r.get<std::uint64_t>();
  s.world = r.get<std::int32_t>();
  s.rank = r.get<std::int32_t>();
  s.plan = r.get_text("plan");
  s.settings = r.get_text("settings");
  s.adam_m = r.get_floats();
  s.adam_v = r.get_floats();
  check_finite(s.adam_m, path, "AdamW m value");
  check_finite(s.adam_v, path, "AdamW v value");
  if (r.at + sizeof(sum) != bytes.size())
    fail("state file {}: {} trailing bytes after the state", path,
         bytes.size() - r.at - sizeof(sum));
  return s;
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
