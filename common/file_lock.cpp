#include "common/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/error.hpp"

namespace fabtrain {

FileLock::FileLock(const std::string& path, std::string_view what, std::string_view advice) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("{}: cannot open {}: {}", what, path, std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    std::getline(std::ifstream(path), holder);
    ::close(fd_);
    fd_ = -1;
    fail("{}: in use by another job ({}); {}", what,
         holder.empty() ? "its lock is held" : "process " + holder, advice);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::write(fd_, pid.data(), pid.size()) != ssize_t(pid.size())) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    fail("{}: cannot write {}: {}", what, path, why);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace fabtrain
