// Small helpers every room's tests share: the message of the fabtrain::Error a call throws, a
// temporary folder that is removed when the test binary is done with it, text edits of fixture
// files (to break one thing at a time), and a cap on file sizes that stands in for a full disk.
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace fabtrain::test {

// The message of the fabtrain::Error that f() throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Whether `text` has `part` in it.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The whole text of a file ("" when it cannot be read).
inline std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `text` with its first `from` replaced by `to`; throws when `from` is not there, so a fixture
// that changed cannot make a rejection test pass for the wrong reason.
inline std::string replaced_first(std::string text, const std::string& from,
                                  const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("test fixture lacks: " + from);
  return text.replace(at, from.size(), to);
}

// `text` with every `from` replaced by `to`.
inline std::string replaced_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// A fresh folder under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes text to a file of the folder; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

// While it lives, a write that would make any file of this process larger than `bytes` fails with
// EFBIG, as a full disk fails it with ENOSPC (RLIMIT_FSIZE, which binds root too; SIGXFSZ ignored).
class FileSizeCap {
 public:
  explicit FileSizeCap(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old_;
    small.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &small);
  }
  ~FileSizeCap() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, previous_);
  }
  FileSizeCap(const FileSizeCap&) = delete;
  FileSizeCap& operator=(const FileSizeCap&) = delete;

 private:
  rlimit old_{};
  void (*previous_)(int) = nullptr;
};

}  // namespace fabtrain::test
