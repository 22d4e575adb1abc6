// libFuzzer target: a slice YAML file through load_slice (against the built-in catalog).
#include "platforms/slice.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "slice.yaml");
  fabtrain::fuzz::refused_only_by_error([&] {
    const fabtrain::Slice s = fabtrain::load_slice(path);
    (void)s.gpus();
    (void)s.site_names();
  });
  return 0;
}
