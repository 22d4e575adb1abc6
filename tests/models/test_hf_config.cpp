// A Hugging Face config.json is read in full or refused by name.
#include <doctest/doctest.h>

#include <string>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "models/costs.hpp"
#include "models/model_spec.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {
std::string fixture(const std::string& name) {
  return source_dir() + "/tests/models/configs/" + name;
}
std::int64_t summed_block_parameters(const ModelSpec& m) {
  std::int64_t sum = 0;
  for (int i = 0; i < block_count(m); ++i) sum += block_parameters(m, block_at(m, i), 1);
  return sum;
}
double step_flops(const ModelSpec& m, int b, int s) {
  double sum = 0;
  for (int i = 0; i < block_count(m); ++i)
    sum += forward_cost(m, block_at(m, i), b, s, 1, Precision::fp32).flops +
           backward_cost(m, block_at(m, i), b, s, 1, Precision::fp32).flops;
  return sum;
}
}  // namespace

TEST_CASE("a config.json with every GPT-2 key is stock gpt2-nano's shape") {
  const ModelSpec m = load_model(fixture("stock.json"));
  const ModelSpec nano = load_model("gpt2-nano");
  CHECK(m.is_stock_gpt2());
  CHECK(m.mlp_width() == 256);
  CHECK(m.parameters() == nano.parameters());
}

TEST_CASE("n_inner sets the MLP width in parameters, FLOPs and memory") {
  const ModelSpec stock = load_model(fixture("stock.json"));
  const ModelSpec m = load_model(fixture("n-inner.json"));  // n_inner 128 instead of 4*64
  CHECK(m.mlp_width() == 128);
  CHECK_FALSE(m.is_stock_gpt2());
  CHECK(m.non_stock_settings().find("n_inner=128") != std::string::npos);
  // per layer: fc 64x128 + 128 bias, fcproj 128x64, against 64x256 + 256 and 256x64
  const std::int64_t fewer = 2 * ((64 * 256 + 256 + 256 * 64) - (64 * 128 + 128 + 128 * 64));
  CHECK(stock.parameters() - m.parameters() == fewer);
  CHECK(summed_block_parameters(m) == m.parameters());
  const Block mlp{BlockKind::mlp, 0};
  CHECK(forward_cost(m, mlp, 4, 128, 1, Precision::fp32).flops * 2 ==
        doctest::Approx(forward_cost(stock, mlp, 4, 128, 1, Precision::fp32).flops));
  CHECK(activation_bytes(m, mlp, 4, 128, 1, Precision::fp32, false) <
        activation_bytes(stock, mlp, 4, 128, 1, Precision::fp32, false));
  // the study's formula with F in place of 4h agrees with the per-block count, as it does stock
  CHECK(step_flops(m, 4, 128) == doctest::Approx(alpa_step_flops(m, 4, 128, false)).epsilon(1e-12));
  CHECK(alpa_step_flops(m, 4, 128, false) < alpa_step_flops(stock, 4, 128, false));
}

TEST_CASE("untied embeddings add the output matrix to the head, not to the embedding") {
  const ModelSpec stock = load_model(fixture("stock.json"));
  const ModelSpec m = load_model(fixture("untied.json"));
  CHECK_FALSE(m.tie_word_embeddings);
  CHECK(m.parameters() - stock.parameters() == 256 * 64);
  CHECK(summed_block_parameters(m) == m.parameters());
  const Block head{BlockKind::head, -1}, embed{BlockKind::embed, -1};
  CHECK(block_parameters(m, head, 1) - block_parameters(stock, head, 1) == 256 * 64);
  CHECK(block_parameters(m, embed, 1) == block_parameters(stock, embed, 1));
  // same products: the tied matrix is used as the output layer all the same
  CHECK(step_flops(m, 4, 128) == doctest::Approx(step_flops(stock, 4, 128)));
  CHECK(training_flops_per_token(m, 128) == doctest::Approx(training_flops_per_token(stock, 128)));
}

TEST_CASE("the activation function is read; it leaves the cost as it is") {
  const ModelSpec stock = load_model(fixture("stock.json"));
  const ModelSpec m = load_model(fixture("relu.json"));
  CHECK(m.activation == Activation::relu);
  CHECK(m.non_stock_settings() == "activation_function=relu (stock: gelu_new)");
  const Block mlp{BlockKind::mlp, 1};
  CHECK(forward_cost(m, mlp, 2, 64, 1, Precision::fp32).bytes ==
        forward_cost(stock, mlp, 2, 64, 1, Precision::fp32).bytes);
  CHECK(m.parameters() == stock.parameters());
}

TEST_CASE("a Llama config and unknown keys are refused with what is supported") {
  const std::string llama = test::error_of([] { load_model(fixture("llama.json")); });
  CHECK(llama.find("model_type is \"llama\"") != std::string::npos);
  CHECK(llama.find("GPT-2 configs only") != std::string::npos);
  CHECK(llama.find("GPT2LMHeadModel") != std::string::npos);
  const std::string key = test::error_of([] { load_model(fixture("unknown-key.json")); });
  CHECK(key.find("key 'rotary_dim' is not a GPT-2 setting") != std::string::npos);
  CHECK(key.find("n_inner") != std::string::npos);  // the list of what it reads
}

TEST_CASE("bad values of the new keys are refused by key, value and rule") {
  const test::TempDir dir("fabtrain-hf-config");
  const std::string shape =
      R"("n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 128, "vocab_size": 256)";
  auto error_with = [&](const std::string& extra) {
    const std::string path = dir.write("config.json", "{" + shape + ", " + extra + "}");
    return test::error_of([&] { load_model(path); });
  };
  CHECK(error_with(R"("activation_function": "swish")")
            .find("activation_function is \"swish\"; supported: gelu_new, gelu, relu") !=
        std::string::npos);
  CHECK(error_with(R"("n_inner": 0)").find("n_inner=0 must be positive") != std::string::npos);
  CHECK(error_with(R"("n_inner": 1000000)").find("n_inner is 1000000; fabtrain handles at most") !=
        std::string::npos);
  CHECK(error_with(R"("tie_word_embeddings": "no")")
            .find("tie_word_embeddings must be true or false") != std::string::npos);
  CHECK(error_with(R"("n_ctx": 64)").find("n_ctx=64 differs from n_positions=128") !=
        std::string::npos);
  CHECK(error_with(R"("architectures": ["GPTNeoXForCausalLM"])")
            .find("architectures names \"GPTNeoXForCausalLM\"") != std::string::npos);
  CHECK(
      error_with(R"("scale_attn_by_inverse_layer_idx": true)")
          .find("scale_attn_by_inverse_layer_idx is true; fabtrain supports only GPT-2's false") !=
      std::string::npos);
  CHECK(error_with(R"("n_inner": null)").empty());
}
