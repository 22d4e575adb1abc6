// llm.c model checkpoints, per-rank state files and atomic writes (see checkpoint.hpp).
#include "exec/checkpoint.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "exec/kernels_layout.hpp"

namespace fabtrain {
namespace {

constexpr std::int32_t kModelMagic = 20240326;
constexpr std::int32_t kStateMagic = 20250101;  // ours: fabtrain rank state
constexpr std::int32_t kStateVersion = 1;

std::vector<char> read_whole_file(const std::string& path, const char* what) {
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
  std::vector<float> get_floats() {
    const auto n = get<std::int64_t>();
    if (n < 0) fail("state file {}: negative array length {}", path, n);
    need(std::size_t(n) * sizeof(float));
    std::vector<float> v(static_cast<std::size_t>(n));
    std::memcpy(v.data(), bytes.data() + at, v.size() * sizeof(float));
    at += v.size() * sizeof(float);
    return v;
  }
};

}  // namespace

void write_file_atomically(const std::string& path, std::span<const char> bytes) {
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot write {} (does the directory exist and is it writable?)", temp);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.flush();
    if (!out) fail("write error on {} (disk full?)", temp);
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) fail("cannot rename {} to {}: {}", temp, path, ec.message());
}

void write_model_checkpoint(const std::string& path, const ModelSpec& model,
                            std::span<const float> full_parameters) {
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
  std::memcpy(bytes.data(), header, sizeof(header));
  std::memcpy(bytes.data() + sizeof(header), full_parameters.data(),
              full_parameters.size() * sizeof(float));
  write_file_atomically(path, bytes);
}

std::vector<float> read_model_checkpoint(const std::string& path, const ModelSpec& model) {
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
  std::vector<float> full(static_cast<std::size_t>(count));
  std::memcpy(full.data(), bytes.data() + sizeof(header), full.size() * sizeof(float));
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
  w.put_floats(s.adam_m);
  w.put_floats(s.adam_v);
  write_file_atomically(path, w.bytes);
}

RankState read_rank_state(const std::string& path) {
  const std::vector<char> bytes = read_whole_file(path, "state file");
  Reader r{bytes, path};
  const auto magic = r.get<std::int32_t>();
  if (magic != kStateMagic)
    fail("state file {}: wrong magic {} (expected {})", path, magic, kStateMagic);
  const auto version = r.get<std::int32_t>();
  if (version != kStateVersion)
    fail("state file {}: version {}, expected {}", path, version, kStateVersion);
  RankState s;
  s.step = r.get<std::int64_t>();
  s.data_position = r.get<std::int64_t>();
  s.seed = r.get<std::uint64_t>();
  s.world = r.get<std::int32_t>();
  s.rank = r.get<std::int32_t>();
  const auto plan_length = r.get<std::int64_t>();
  if (plan_length < 0 || plan_length > 4096)
    fail("state file {}: plan text length {} is out of range", path, plan_length);
  r.need(std::size_t(plan_length));
  s.plan.assign(bytes.data() + r.at, std::size_t(plan_length));
  r.at += std::size_t(plan_length);
  s.adam_m = r.get_floats();
  s.adam_v = r.get_floats();
  if (r.at != bytes.size())
    fail("state file {}: {} trailing bytes after the state", path, bytes.size() - r.at);
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
  write_file_atomically(dir + "/latest", text);
}

std::optional<std::int64_t> read_latest_step(const std::string& dir) {
  std::ifstream in(dir + "/latest");
  if (!in) return std::nullopt;
  std::int64_t step = -1;
  if (!(in >> step) || step < 0) fail("checkpoint directory {}: 'latest' does not hold a step", dir);
  return step;
}

}  // namespace fabtrain
