// libFuzzer target: a bench file (fabtrain-exec bench's JSON) through read_bench.
#include "calibrate/inputs.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "bench.json");
  fabtrain::fuzz::refused_only_by_error([&] { (void)fabtrain::calib::read_bench(path); });
  return 0;
}
