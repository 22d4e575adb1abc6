// libFuzzer target: a .npy file through read_npy, as search reads an embedding's vectors.
#include "embed/npy.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "vectors.npy");
  fabtrain::fuzz::refused_only_by_error([&] {
    const fabtrain::embed::Matrix m = fabtrain::embed::read_npy(path);
    if (m.rows > 0 && m.cols > 0) (void)m.row(m.rows - 1)[m.cols - 1];
  });
  return 0;
}
