// Rank state files (see rank_state.hpp).
#include "exec/run/rank_state.hpp"

#include <cstring>

#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "exec/model/checked_file.hpp"

namespace fabtrain {
namespace {

constexpr std::int32_t kStateMagic = 20250101;  // ours: fabtrain rank state
// 2: settings and a checksum; 3: under ZeRO, the shards are 1/dp of each gradient bucket, no
// longer 1/dp of the whole stage, so a version-2 ZeRO state is refused on resume; 4: the loss
// scaler's state after the moments (a flag, then scale, good steps in a row, skipped steps).
constexpr std::int32_t kStateVersion = 4;

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
  w.put(std::int8_t(s.loss_scaling.has_value()));
  if (s.loss_scaling) {
    w.put(s.loss_scaling->scale);
    w.put(std::int32_t(s.loss_scaling->good_in_a_row));
    w.put(std::int32_t(s.loss_scaling->skipped));
  }
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
  if (version < 2 || version > kStateVersion)
    fail("state file {}: version {}, expected 2 to {}", path, version, kStateVersion);
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
  if (version >= 4 && r.get<std::int8_t>() != 0) {
    LossScalerState scaling;
    scaling.scale = r.get<float>();
    scaling.good_in_a_row = r.get<std::int32_t>();
    scaling.skipped = r.get<std::int32_t>();
    s.loss_scaling = scaling;
  }
  if (r.at + sizeof(sum) != bytes.size())
    fail("state file {}: {} trailing bytes after the state", path,
         bytes.size() - r.at - sizeof(sum));
  return s;
}

}  // namespace fabtrain
