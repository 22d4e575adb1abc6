// Writes small YAML files into a fresh temporary folder for the platform loader tests.
#pragma once
#include "tests/test_support.hpp"

namespace fabtrain::test {

struct TempYaml : TempDir {
  TempYaml() : TempDir("fabtrain-platforms-test") {}
};

}  // namespace fabtrain::test
