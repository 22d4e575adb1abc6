// libFuzzer target: a slice saved by fablib (GraphML or node-link JSON, told apart by the first
// character) through import_fablib_slice and the slice YAML it writes.
#include "platforms/fablib_import.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "saved-slice");
  fabtrain::fuzz::refused_only_by_error([&] {
    const auto imported = fabtrain::import_fablib_slice(path, fabtrain::builtin_catalog());
    (void)fabtrain::to_slice_yaml(imported);
  });
  return 0;
}
