// Sampling: the same seed gives the same tokens and another seed others; greedy decoding through
// the key-value cache equals greedy decoding by a full forward pass per token; top-k and
// temperature draw from the distribution they define.
#include <doctest/doctest.h>

#include <cmath>

#include "exec/model/gpt2_stage.hpp"
#include "exec/model/sampling.hpp"
#include "tests/test_support.hpp"

namespace fabtrain {
namespace {

const ModelSpec kModel{"sample-test", 2, 32, 4, 24, 200};

TEST_CASE("the same seed gives the same sample, another seed another") {
  Gpt2Inference model(kModel, init_full_parameters(kModel, 11));
  const std::vector<int> prompt = {5, 17, 42};
  SampleOptions o;
  o.max_tokens = 15;
  o.top_k = 0;
  o.seed = 1;
  const std::vector<int> a = generate(model, prompt, o);
  const std::vector<int> b = generate(model, prompt, o);
  o.seed = 2;
  const std::vector<int> c = generate(model, prompt, o);
  CHECK(a.size() == 15);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("greedy decoding with the KV cache equals a full forward pass per token") {
  const std::vector<float> params = init_full_parameters(kModel, 5);
  Gpt2Inference cached(kModel, params);
  SampleOptions o;
  o.temperature = 0;
  o.max_tokens = 30;  // more than fit: stops when the context (24) is full
  const std::vector<int> prompt = {1, 2, 3, 4};
  const std::vector<int> got = generate(cached, prompt, o);
  CHECK(got.size() == 24 - 4 + 1);  // the last token is drawn from the full context, not fed back

  Gpt2Inference full(kModel, params);
  std::vector<int> seq = prompt, want;
  while (want.size() < got.size()) {
    full.reset();
    full.forward(seq);  // every position again
    const int next = sample_token(full.last_logits(), 0, 0, 0.0);
    want.push_back(next);
    seq.push_back(next);
  }
  CHECK(got == want);
  o.temperature = 1, o.top_k = 1;  // top-1 is greedy at any temperature
  CHECK(generate(cached, prompt, o) == got);
}

TEST_CASE("sample_token draws from softmax(logits / temperature) over the top k") {
  const std::vector<float> logits = {0.0f, std::log(3.0f), -1e9f};  // p = 1/4, 3/4, 0
  CHECK(sample_token(logits, 1, 0, 0.74) == 1);
  CHECK(sample_token(logits, 1, 0, 0.76) == 0);
  CHECK(sample_token(logits, 1, 1, 0.99) == 1);
  CHECK(sample_token(logits, 0.5f, 0, 0.89) == 1);  // p = 1/10, 9/10
  CHECK(sample_token(logits, 0.5f, 0, 0.91) == 0);
  CHECK(sample_token(logits, 0, 0, 0.99) == 1);
}

TEST_CASE("a prompt longer than the context is refused by name") {
  Gpt2Inference model(kModel, init_full_parameters(kModel, 1));
  const std::vector<int> prompt(25, 3);
  CHECK(test::error_of([&] {
          generate(model, prompt, {});
        }).find("longer than the context of 24 tokens") != std::string::npos);
}

}  // namespace
}  // namespace fabtrain
