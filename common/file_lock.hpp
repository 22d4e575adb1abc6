// A lock file that keeps two jobs from writing one output at once: flock(2) on it, held until
// destruction (or the process's end, however it ends), with the holder's process id written in
// it so that the refused job can name it. The file stays after the job (removing it would let a
// third job lock a new file while a second still holds the old one).
#pragma once
#include <string>
#include <string_view>

namespace fabtrain {

class FileLock {
 public:
  // Takes the lock on `path` (created when missing), or fails with "<what>: in use by another job
  // (process N); <advice>"; `what` names the output ("--checkpoint-dir ck").
  FileLock(const std::string& path, std::string_view what, std::string_view advice);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace fabtrain
