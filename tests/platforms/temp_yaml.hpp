// Writes small YAML files into a fresh temporary folder for the platform loader tests.
#pragma once
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fabtrain::test {

class TempYaml {
 public:
  TempYaml() {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("fabtrain-platforms-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  ~TempYaml() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace fabtrain::test
