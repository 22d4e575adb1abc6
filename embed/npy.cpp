// .npy float32 matrices (see npy.hpp). The header is the magic, version 1.0, a little-endian
// uint16 length and a Python dict literal padded with spaces so the data starts at a multiple
// of 64 bytes.
#include "embed/npy.hpp"

#include <cstring>
#include <fstream>
#include <regex>

#include "common/error.hpp"
#include "exec/model/checkpoint.hpp"

namespace fabtrain::embed {

void write_npy(const std::string& path, const Matrix& m) {
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
  write_file_atomically(path, bytes);
}

Matrix read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path);
  char head[10];
  if (!in.read(head, 10) || std::memcmp(head, "\x93NUMPY\x01\x00", 8) != 0)
    fail("{}: not a version 1.0 .npy file", path);
  const std::size_t len = std::size_t((unsigned char)head[8]) | std::size_t((unsigned char)head[9])
                                                                    << 8;
  std::string dict(len, '\0');
  if (!in.read(dict.data(), std::streamsize(len))) fail("{}: header cut short", path);
  std::smatch match;
  if (dict.find("'descr': '<f4'") == std::string::npos ||
      dict.find("'fortran_order': False") == std::string::npos ||
      !std::regex_search(dict, match, std::regex(R"('shape': \((\d+), (\d+)\))")))
    fail("{}: expected a C-order float32 matrix ('<f4', two dimensions), header {}", path, dict);
  Matrix m;
  m.rows = std::stoll(match[1]);
  m.cols = std::stoll(match[2]);
  m.data.resize(std::size_t(m.rows * m.cols));
  if (!in.read(reinterpret_cast<char*>(m.data.data()),
               std::streamsize(m.data.size() * sizeof(float))))
    fail("{}: {} x {} floats announced, fewer stored", path, m.rows, m.cols);
  return m;
}

}  // namespace fabtrain::embed
