#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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

void write_file_atomically(const std::string& given, std::span<const char> bytes,
                           std::string_view what) {
  // A device or a pipe (/dev/stdout, /dev/null) is written in place: renaming over it would replace
  // it.
  std::error_code ec;
  // A symbolic link is written through: its target is replaced, the link stays.
  const std::string path =
      std::filesystem::is_symlink(given, ec) && std::filesystem::exists(given, ec)
          ? std::filesystem::canonical(given).string()
          : given;
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

StagedFolder::StagedFolder(std::string dir, std::vector<std::string> owned, std::string_view what)
    : dir_(std::move(dir)), what_(what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir_, ec) && !fs::is_directory(dir_, ec))
    fail("{} {}: exists and is not a folder", what_, dir_);
  fs::path target = fs::absolute(dir_).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();  // "out/"
  fs::create_directories(target.parent_path(), ec);
  if (ec) fail("{} {}: cannot create its parent folder ({})", what_, dir_, ec.message());
  target_ = target.string();
  // Beside the folder, not in it: commit() replaces the folder.
  lock_ = std::make_unique<FileLock>(target_ + ".lock", what_ + " " + dir_, "wait for it to end");
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::find(owned.begin(), owned.end(), name) == owned.end())
      fail("{} {}: holds {}, which is not one of its outputs; choose a new or empty folder", what_,
           dir_, name);
  }
  staging_ = fmt::format("{}.tmp-{}", target_, ::getpid());
  fs::remove_all(staging_, ec);
  if (!fs::create_directory(staging_, ec))
    fail("{} {}: cannot create {} ({})", what_, dir_, staging_, ec.message());
}

StagedFolder::~StagedFolder() {
  std::error_code ec;
  if (!committed_) std::filesystem::remove_all(staging_, ec);
}

void StagedFolder::commit() {
  namespace fs = std::filesystem;
  const std::string aside = staging_ + "-earlier";
  const bool earlier = fs::exists(target_);
  if (earlier && ::rename(target_.c_str(), aside.c_str()) != 0)
    fail("{} {}: cannot move the earlier folder aside: {}", what_, dir_, std::strerror(errno));
  if (::rename(staging_.c_str(), target_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    if (earlier) ::rename(aside.c_str(), target_.c_str());
    fail("{} {}: cannot rename {} to it: {}; the earlier folder is as it was", what_, dir_,
         staging_, why);
  }
  committed_ = true;
  std::error_code ec;
  if (earlier) fs::remove_all(aside, ec);
}

}  // namespace fabtrain
