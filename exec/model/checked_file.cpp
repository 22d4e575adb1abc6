// What the checkpoint's files share (see checked_file.hpp).
#include "exec/model/checked_file.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"

namespace fabtrain {

std::uint64_t checksum(const char* data, std::size_t n) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ std::uint8_t(data[i])) * 1099511628211ULL;
  return h;
}

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

}  // namespace fabtrain
