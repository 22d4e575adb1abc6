// libFuzzer target: an index.faiss file through VectorIndex, as search reads it, then one search
// of a unit query; every row a hit names must be one of the index's vectors.
#include <cmath>

#include "embed/vector_index.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  fabtrain::fuzz::refused_only_by_error([&] {
    const fabtrain::embed::VectorIndex index(bytes, "index.faiss");
    std::vector<float> query(std::size_t(index.dimension()), 0.0f);
    query[0] = 1.0f;
    for (const auto& hit : index.search(query, 5))
      if (hit.row < 0 || hit.row >= index.size()) __builtin_trap();
  });
  return 0;
}
