// .npy float32 matrices (see npy.hpp). The header is the magic, version 1.0, a little-endian
// uint16 length and a Python dict literal padded with spaces so the data starts at a multiple
// of 64 bytes.
#include "embed/npy.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/error.hpp"

namespace fabtrain::embed {

std::string npy_bytes(const Matrix& m) {
  std::string dict = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}",
                                 m.rows, m.cols);
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string bytes = "\x93NUMPY";
  bytes.push_back('\x01');
  bytes.push_back('\x00');
  bytes.push_back(char(dict.size() & 0xFF));
  bytes.push_back(char(dict.size() >> 8));
  bytes += dict;
  const char* p = reinterpret_cast<const char*>(m.data.data());
  bytes.append(p, p + m.data.size() * sizeof(float));
  return bytes;
}

void write_npy(const std::string& path, const Matrix& m) {
  write_text_atomically(path, npy_bytes(m), "vectors");
}

Matrix parse_npy(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 10 || bytes.substr(0, 8) != std::string_view("\x93NUMPY\x01\x00", 8))
    fail("{}: not a version 1.0 .npy file", path);
  const std::size_t len =
      std::size_t((unsigned char)bytes[8]) | std::size_t((unsigned char)bytes[9]) << 8;
  if (bytes.size() < 10 + len) fail("{}: header cut short", path);
  const std::string dict(bytes.substr(10, len));
  std::smatch match;
  if (dict.find("'descr': '<f4'") == std::string::npos ||
      dict.find("'fortran_order': False") == std::string::npos ||
      !std::regex_search(dict, match, std::regex(R"('shape': \((\d{1,18}), (\d{1,18})\))")))
    fail("{}: expected a C-order float32 matrix ('<f4', two dimensions), header {}", path, dict);
  Matrix m;
  m.rows = std::stoll(match[1]);
  m.cols = std::stoll(match[2]);
  const std::size_t data = bytes.size() - 10 - len;
  // Compared by division: rows x cols x 4 of a hostile header overflows 64 bits.
  const std::uint64_t floats = data / sizeof(float), rows = std::uint64_t(m.rows);
  const bool fits =
      data % sizeof(float) == 0 &&
      (rows == 0 ? floats == 0 : floats % rows == 0 && floats / rows == std::uint64_t(m.cols));
  if (!fits)
    fail("{}: the header announces {} x {} floats, the file holds {} bytes of data", path, m.rows,
         m.cols, data);
  m.data.resize(data / sizeof(float));
  // An empty vector's data() may be null, which memcpy may not be given even for no bytes.
  if (data > 0) std::memcpy(m.data.data(), bytes.data() + 10 + len, data);
  return m;
}

Matrix read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return parse_npy(bytes.str(), path);
}

std::int64_t first_non_finite(const float* values, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i)
    if (!std::isfinite(values[i])) return i;
  return -1;
}

void require_finite(const Matrix& m, const std::string& path) {
  const std::int64_t at = first_non_finite(m.data.data(), std::int64_t(m.data.size()));
  if (at >= 0)
    fail("{}: row {} holds {} in column {}: vectors must be finite; run embed again", path,
         at / m.cols, m.data[std::size_t(at)], at % m.cols);
}

}  // namespace fabtrain::embed
