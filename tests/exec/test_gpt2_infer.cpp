// The inference path with its key-value cache against the training stage (the reference): the
// logits of every position, whether the tokens come all at once or one by one, equal those of
// Gpt2Stage's forward over the whole sequence.
#include <doctest/doctest.h>

#include <cmath>

#include "exec/model/gpt2_infer.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "models/costs.hpp"
#include "tests/test_support.hpp"

namespace fabtrain {
namespace {

TEST_CASE(
    "KV-cache inference gives the training stage's logits, a position at a time or all at once") {
  ModelSpec m{"infer-test", 2, 32, 4, 16, 300};
  const std::vector<float> full = init_full_parameters(m, 7);
  const int T = 12;
  std::vector<int> tokens(T);
  for (int i = 0; i < T; ++i) tokens[std::size_t(i)] = (i * 37 + 5) % m.vocab_size;

  Gpt2Stage stage(m, BlockRange{0, block_count(m)}, 1, 0, 1, T, 1);
  stage.load_full(full);
  stage.set_tokens(0, tokens);
  stage.set_targets(0, tokens);
  for (int b = 0; b < block_count(m); ++b) stage.forward(b, 0);
  const std::span<const float> want = stage.logits(0);  // (T, Vp)

  Gpt2Inference one_by_one(m, full);
  Gpt2Inference at_once(m, full);
  at_once.forward(std::span<const int>(tokens).first(T - 1));
  at_once.forward(std::span<const int>(tokens).last(1));
  double worst = 0;
  for (int i = 0; i < T; ++i) {
    one_by_one.forward(std::span<const int>(tokens).subspan(std::size_t(i), 1));
    const std::vector<float> got = one_by_one.last_logits();
    REQUIRE(int(got.size()) == m.vocab_size);
    for (int v = 0; v < m.vocab_size; ++v)
      worst = std::max(worst, double(std::fabs(got[std::size_t(v)] -
                                               want[std::size_t(i) * m.padded_vocab() + v])));
  }
  CHECK(worst < 1e-4);
  CHECK(one_by_one.position() == T);
  const std::vector<float> last = at_once.last_logits();
  for (int v = 0; v < m.vocab_size; ++v)
    CHECK(std::fabs(last[std::size_t(v)] - want[std::size_t(T - 1) * m.padded_vocab() + v]) < 1e-4);
}

TEST_CASE("inference refuses more tokens than the context and tokens outside the vocabulary") {
  ModelSpec m{"infer-test", 1, 16, 2, 8, 50};
  Gpt2Inference infer(m, init_full_parameters(m, 1));
  std::vector<int> nine(9, 1);
  CHECK(test::error_of([&] { infer.forward(nine); }).find("do not fit the context of 8") !=
        std::string::npos);
  std::vector<int> bad = {50};
  CHECK(test::error_of([&] { infer.forward(bad); }).find("token 50 is outside the vocabulary") !=
        std::string::npos);
}

}  // namespace
}  // namespace fabtrain
