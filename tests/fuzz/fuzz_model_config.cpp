// libFuzzer target: a Hugging Face config.json through load_model, and the sizes derived from it.
#include "models/costs.hpp"
#include "models/model_spec.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fabtrain::fuzz::write_input(data, size, "config.json");
  fabtrain::fuzz::refused_only_by_error([&] {
    const fabtrain::ModelSpec m = fabtrain::load_model(path);
    (void)m.parameters();
    (void)fabtrain::training_flops_per_token(m, m.n_ctx);
  });
  return 0;
}
