// libFuzzer target: a calibration YAML file through load_calibration (against the built-in
// catalog).
#include "sim/cost/calibration.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "calibration.yaml");
  fabtrain::fuzz::refused_only_by_error([&] { (void)fabtrain::load_calibration(path); });
  return 0;
}
