#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"

namespace fabtrain {
namespace {

// Removes the temporary file unless the rename happened.
struct TempFile {
  std::string path;
  int fd = -1;
  bool renamed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!renamed) ::unlink(path.c_str());
  }
};

}  // namespace

void write_file_atomically(const std::string& path, std::span<const char> bytes,
                           std::string_view what) {
  // A device or a pipe (/dev/stdout, /dev/null) is written in place: renaming over it would replace
  // it.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  const bool in_place =
      !ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
  if (std::filesystem::is_directory(status)) fail("{} {}: is a directory", what, path);
  TempFile temp{in_place ? path : path + ".tmp-" + std::to_string(::getpid())};
  temp.renamed = in_place;  // never unlink the device
  temp.fd = in_place ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC)
                     : ::open(temp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (temp.fd < 0)
    fail("{} {}: cannot write {}: {} (does the directory exist and is it writable?)", what, path,
         temp.path, std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(temp.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      fail("{} {}: write failed after {} of {} bytes: {} (disk full?); nothing was replaced", what,
           path, done, bytes.size(), std::strerror(n < 0 ? errno : ENOSPC));
    done += std::size_t(n);
  }
  if (!in_place && ::fsync(temp.fd) != 0)
    fail("{} {}: fsync failed: {}; nothing was replaced", what, path, std::strerror(errno));
  const int fd = temp.fd;
  temp.fd = -1;
  if (::close(fd) != 0)
    fail("{} {}: close failed: {}; nothing was replaced", what, path, std::strerror(errno));
  if (in_place) return;
  if (::rename(temp.path.c_str(), path.c_str()) != 0)
    fail("{} {}: cannot rename {} over it: {}", what, path, temp.path, std::strerror(errno));
  temp.renamed = true;
}

}  // namespace fabtrain
