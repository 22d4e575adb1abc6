#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "models/costs.hpp"
#include "models/model_spec.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

TEST_CASE("built-in GPT-2 parameter counts are exact") {
  CHECK(load_model("gpt2").parameters() == 124'439'808);
  CHECK(load_model("gpt2-medium").parameters() == 354'823'168);
  CHECK(load_model("gpt2-large").parameters() == 774'030'080);
  CHECK(load_model("gpt2-nano").n_layer == 2);
  CHECK(load_model("gpt2-nano").padded_vocab() == 256);
  CHECK(load_model("gpt2").padded_vocab() == 50304);
}

TEST_CASE("block parameters add up to the model's parameters") {
  for (const auto& m : builtin_models()) {
    std::int64_t sum = 0;
    for (int i = 0; i < block_count(m); ++i) sum += block_parameters(m, block_at(m, i), 1);
    CHECK_MESSAGE(sum == m.parameters(), m.name);
  }
}

TEST_CASE("forward FLOPs over blocks times three equal the study's formula") {
  for (const auto& m : builtin_models()) {
    const int b = 4, s = m.n_ctx;
    double fwd = 0, bwd = 0;
    for (int i = 0; i < block_count(m); ++i) {
      fwd += forward_cost(m, block_at(m, i), b, s, 1, Precision::fp32).flops;
      bwd += backward_cost(m, block_at(m, i), b, s, 1, Precision::fp32).flops;
    }
    CHECK(fwd + bwd == doctest::Approx(alpa_step_flops(m, b, s, false)).epsilon(1e-12));
  }
}

TEST_CASE("tensor parallel splits layer FLOPs exactly, and a vocabulary-parallel head's") {
  const auto m = load_model("gpt2-medium");
  const Block attn{BlockKind::attn, 3}, head{BlockKind::head, -1};
  CHECK(forward_cost(m, attn, 8, 1024, 4, Precision::fp32).flops * 4 ==
        doctest::Approx(forward_cost(m, attn, 8, 1024, 1, Precision::fp32).flops));
  // a head split over 4 ranks (vocabulary-parallel) does a quarter of the logits each
  CHECK(forward_cost(m, head, 8, 1024, 4, Precision::fp32).flops * 4 ==
        doctest::Approx(forward_cost(m, head, 8, 1024, 1, Precision::fp32).flops));
}

TEST_CASE("model states follow the ZeRO paper") {
  const double P = 1e9;
  // mixed precision: (2 + 2 + 12) P, ZeRO-1 shards the 12, ZeRO-2 also the gradients, 3 all.
  CHECK(model_state_bytes(P, Precision::fp16, 0, 8).total() == doctest::Approx(16 * P));
  CHECK(model_state_bytes(P, Precision::fp16, 1, 8).total() == doctest::Approx(4 * P + 12 * P / 8));
  CHECK(model_state_bytes(P, Precision::fp16, 2, 8).total() == doctest::Approx(2 * P + 14 * P / 8));
  CHECK(model_state_bytes(P, Precision::fp16, 3, 8).total() == doctest::Approx(16 * P / 8));
  CHECK(model_state_bytes(P, Precision::fp32, 0, 4).total() == doctest::Approx(16 * P));
}

TEST_CASE("the study's TFLOP/s formula") {
  const auto m = load_model("gpt2-medium");
  const double f = 72.0 * 8 * 1024 * 1024.0 * 1024 * 24 * (1 + 1024 / (6.0 * 1024)) +
                   6.0 * 8 * 1024 * 1024 * 50257;
  CHECK(alpa_step_flops(m, 8, 1024, false) == doctest::Approx(f));
  CHECK(alpa_tflops_per_gpu(m, 8, 1024, false, 2.0, 4) == doctest::Approx(f / 2 / 4 / 1e12));
  CHECK(alpa_step_flops(m, 8, 1024, true) > alpa_step_flops(m, 8, 1024, false));
}

TEST_CASE("a Hugging Face config.json loads, bad ones are refused by name") {
  const auto dir = std::filesystem::temp_directory_path() / "fabtrain-test-model";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "config.json").string();
  std::ofstream(path) << R"({"n_layer": 24, "n_embd": 1024, "n_head": 16, "n_positions": 1024,
                            "vocab_size": 50257, "model_type": "gpt2"})";
  CHECK(load_model(path).parameters() == 354'823'168);
  std::ofstream(path) << R"({"n_layer": 24, "n_embd": 1000, "n_head": 16, "n_positions": 1024,
                            "vocab_size": 50257})";
  CHECK_THROWS_WITH_AS(load_model(path), doctest::Contains("n_head=16 does not divide"), Error);
  std::ofstream(path) << R"({"n_layer": "24"})";
  CHECK_THROWS_WITH_AS(load_model(path), doctest::Contains("n_layer"), Error);
  std::ofstream(path) << "{ not json";
  CHECK_THROWS_WITH_AS(load_model(path), doctest::Contains("not valid JSON"), Error);
  CHECK_THROWS_WITH_AS(load_model("gpt3"), doctest::Contains("unknown model 'gpt3'"), Error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("flash attention: no scores in memory, one more product in backward, MLP unchanged") {
  const auto m = load_model("gpt2-medium");
  const Block attn{BlockKind::attn, 0}, mlp{BlockKind::mlp, 0};
  const int b = 8, s = 1024, tp = 2;
  const auto P = Precision::bf16;
  // written by QK^T, read and written by softmax, read by PV
  const double scores = 4.0 * b * m.n_head * s * s * 2 / tp;
  const WorkCost naive = forward_cost(m, attn, b, s, tp, P, Attention::naive);
  const WorkCost flash = forward_cost(m, attn, b, s, tp, P, Attention::flash);
  CHECK(naive.flops == flash.flops);
  CHECK(naive.bytes - flash.bytes == doctest::Approx(scores));
  CHECK(activation_bytes(m, attn, b, s, tp, P, false, Attention::flash) <
        activation_bytes(m, attn, b, s, tp, P, false, Attention::naive) - scores / 4);
  const double core = 4.0 * b * s * s * m.n_embd / tp;  // QK^T and PV, forward
  CHECK(backward_cost(m, attn, b, s, tp, P, Attention::flash).flops ==
        doctest::Approx(backward_cost(m, attn, b, s, tp, P, Attention::naive).flops + core / 2));
  CHECK(forward_cost(m, mlp, b, s, tp, P, Attention::flash).bytes ==
        forward_cost(m, mlp, b, s, tp, P, Attention::naive).bytes);
  CHECK(parse_attention("flash") == Attention::flash);
  CHECK_THROWS_AS(parse_attention("fused"), Error);
}

TEST_CASE("a block's kernels: products' operands overlap their FLOPs, the rest is element-wise") {
  const auto m = load_model("gpt2-medium");
  const int b = 4, s = 1024;
  const auto P = Precision::fp16;
  const double A = double(b) * s * m.n_embd * 2;  // one activation, bytes
  const Block embed{BlockKind::embed, -1}, attn{BlockKind::attn, 0}, mlp{BlockKind::mlp, 0},
      head{BlockKind::head, -1};
  // LayerNorm, QKV, core (one fused kernel, or QK^T, softmax, PV), projection, residual add.
  CHECK(forward_cost(m, attn, b, s, 1, P, Attention::flash).kernels == 5);
  CHECK(forward_cost(m, attn, b, s, 1, P, Attention::naive).kernels == 7);
  CHECK(forward_cost(m, mlp, b, s, 1, P).kernels == 5);   // LayerNorm, FC, GELU, projection, add
  CHECK(forward_cost(m, head, b, s, 1, P).kernels == 3);  // LayerNorm, logits, cross-entropy
  CHECK(forward_cost(m, embed, b, s, 1, P).kernels == 1);
  CHECK(backward_cost(m, mlp, b, s, 1, P).kernels == 10);
  // Element-wise: LayerNorm (2A), GELU (8A/tp), residual add (3A); the rest are the products'.
  for (int tp : {1, 4}) {
    const WorkCost w = forward_cost(m, mlp, b, s, tp, P);
    CHECK(w.bytes - w.matmul_bytes == doctest::Approx(5 * A + 8 * A / tp));
    CHECK(w.matmul_bytes ==
          doctest::Approx(8.0 * m.n_embd * m.n_embd * 2 / tp + 2 * A + 8 * A / tp));
  }
  const WorkCost e = forward_cost(m, embed, b, s, 1, P);
  CHECK(e.matmul_bytes == 0);
  CHECK(e.bytes > 0);
}

TEST_CASE("Megatron's FLOPs formula (Narayanan et al. 2021, section 5.1)") {
  ModelSpec m{"m", 24, 2304, 24, 2048, 51200};
  const double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
  const double with = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CHECK(megatron_step_flops(m, 512, 2048, true) == doctest::Approx(with));
  CHECK(megatron_step_flops(m, 512, 2048, false) == doctest::Approx(with * 72 / 96));
}

// Sizes are whole, within int and within fabtrain's limits.
TEST_CASE("a config.json's sizes are refused past the limits, never narrowed") {
  const auto dir = std::filesystem::temp_directory_path() / "fabtrain-test-model-limits";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "config.json").string();
  auto with = [&](const std::string& layers, const std::string& embd) {
    std::ofstream(path) << R"({"n_layer": )" << layers << R"(, "n_embd": )" << embd
                        << R"(, "n_head": 4, "n_positions": 128, "vocab_size": 256})";
    return test::error_of([&] { load_model(path); });
  };
  CHECK(with("4294967298", "64").find("n_layer: 4294967298 is out of range") != std::string::npos);
  CHECK(with("1000000000", "64").find("n_layer is 1000000000; fabtrain handles at most 1024") !=
        std::string::npos);
  CHECK(with("1000000", "64").find("fabtrain handles at most 1024") != std::string::npos);
  CHECK(with("2", "2147483520").find("n_embd is 2147483520; fabtrain handles at most 65536") !=
        std::string::npos);
  CHECK(with("1e9", "64").find("'n_layer' must be an integer") != std::string::npos);
  CHECK(with("2", "64").empty());
  std::ofstream(path)
      << R"({"n_layer": 2, "n_layer": 4, "n_embd": 64, "n_head": 4, "n_positions": 128, "vocab_size": 256})";
  CHECK(test::error_of([&] { load_model(path); }).find("key 'n_layer' appears twice") !=
        std::string::npos);
  CHECK(test::error_of([&] { load_model(dir.string()); }).find("cannot be opened") !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}
