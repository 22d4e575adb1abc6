// What every fuzz target shares: the input written to a file of this process (the parsers read
// paths, as the programs do), and the rule that a parser may refuse an input only with
// fabtrain::Error. Anything else (a crash, a sanitizer report, another exception, a hang) is a
// finding: libFuzzer reports an exception that leaves LLVMFuzzerTestOneInput as a crash.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"

namespace fabtrain::fuzz {

// A file named `name` in a folder of this process under the temporary directory, holding the input.
inline std::string write_input(const std::uint8_t* data, std::size_t size,
                               const std::string& name) {
  static const std::filesystem::path dir = [] {
    auto d =
        std::filesystem::temp_directory_path() / ("fabtrain-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path.string();
}

// Runs f; a fabtrain::Error is the expected refusal of a bad input.
template <typename F>
void refused_only_by_error(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

}  // namespace fabtrain::fuzz
