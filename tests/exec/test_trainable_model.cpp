// The executor runs stock GPT-2 and refuses other configs by their settings.
#include <doctest/doctest.h>

#include <string>

#include "common/data_dir.hpp"
#include "exec/model/trainable_model.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

TEST_CASE("the executor loads stock GPT-2 and names each non-stock setting it refuses") {
  const std::string configs = source_dir() + "/tests/models/configs/";
  CHECK(load_trainable_model("gpt2-nano", "train").n_layer == 2);
  CHECK(load_trainable_model(configs + "stock.json", "train").is_stock_gpt2());
  const std::string relu =
      test::error_of([&] { load_trainable_model(configs + "relu.json", "train"); });
  CHECK(relu.find("fabtrain-exec train runs stock GPT-2 only") != std::string::npos);
  CHECK(relu.find("activation_function=relu (stock: gelu_new)") != std::string::npos);
  const std::string untied =
      test::error_of([&] { load_trainable_model(configs + "untied.json", "bench"); });
  CHECK(untied.find("tie_word_embeddings=false") != std::string::npos);
  const std::string inner =
      test::error_of([&] { load_trainable_model(configs + "n-inner.json", "sample"); });
  CHECK(inner.find("n_inner=128 (stock: 4*n_embd=256)") != std::string::npos);
}
