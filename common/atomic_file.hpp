// Every file fabtrain writes (JSON, traces, reports, calibrations, checkpoints) goes to a
// temporary name next to it, is fsync'ed and renamed over the target: a full disk or a crash
// never leaves a truncated file under the real name, and a failed write is an Error (with the
// temporary file removed) instead of a silent exit 0.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_lock.hpp"

namespace fabtrain {

// Writes bytes to path.tmp-<pid>, fsyncs it and renames it over path; `what` names the output in
// messages ("--json", "checkpoint"). A device or a pipe is written in place, a symbolic link
// through (its target is replaced), a directory refused.
void write_file_atomically(const std::string& path, std::span<const char> bytes,
                           std::string_view what = "output");
inline void write_text_atomically(const std::string& path, std::string_view text,
                                  std::string_view what = "output") {
  write_file_atomically(path, std::span<const char>(text.data(), text.size()), what);
}

// A folder of outputs that belong together (an embedding's vectors, listing and index), written
// whole into a staging folder next to it and put in place by commit(): the earlier folder is
// replaced as a whole, never mixed with the new files, and a failed run leaves it untouched.
// A folder holding anything but the `owned` names is refused before anything is written; a
// second job on the same folder is refused while one holds its lock (FileLock, DIR.lock).
class StagedFolder {
 public:
  StagedFolder(std::string dir, std::vector<std::string> owned, std::string_view what);
  ~StagedFolder();  // removes the staging folder of a run that did not commit
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  // Where the output `name` is written before commit().
  std::string path(const std::string& name) const { return staging_ + "/" + name; }
  void commit();

 private:
  std::string dir_, target_, staging_, what_;  // target_: dir_ as an absolute path
  std::unique_ptr<FileLock> lock_;             // held until the job is done with the folder
  bool committed_ = false;
};

}  // namespace fabtrain
