// Temperature / top-k sampling with a KV cache (see sampling.hpp).
#include "exec/model/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.hpp"

namespace fabtrain {
namespace {

struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

}  // namespace

int sample_token(std::span<const float> logits, float temperature, int top_k, double u) {
  const int v = int(logits.size());
  std::vector<int> order(static_cast<std::size_t>(v));
  std::iota(order.begin(), order.end(), 0);
  auto better = [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  if (temperature <= 0) return *std::min_element(order.begin(), order.end(), better);
  const int k = top_k > 0 ? std::min(top_k, v) : v;
  std::partial_sort(order.begin(), order.begin() + k, order.end(), better);
  std::vector<double> p(static_cast<std::size_t>(k));
  const double top = logits[order[0]];
  double sum = 0;
  for (int i = 0; i < k; ++i)
    sum += p[std::size_t(i)] = std::exp((logits[order[std::size_t(i)]] - top) / temperature);
  double cumulative = 0;
  for (int i = 0; i < k; ++i) {
    cumulative += p[std::size_t(i)] / sum;
    if (u < cumulative) return order[std::size_t(i)];
  }
  return order[std::size_t(k - 1)];  // u within rounding of 1
}

std::vector<int> generate(Gpt2Inference& model, std::span<const int> prompt, const SampleOptions& o,
                          const std::function<void(int)>& on_token) {
  const int T = model.model().n_ctx;
  if (prompt.empty()) fail("generate: the prompt needs at least one token");
  if (int(prompt.size()) > T)
    fail("the prompt is {} tokens, longer than the context of {} tokens of model {}", prompt.size(),
         T, model.model().name);
  if (o.max_tokens < 0) fail("--max-tokens={} must not be negative", o.max_tokens);
  if (o.top_k < 0) fail("--top-k={} must not be negative", o.top_k);
  SplitMix64 rng{o.seed};
  model.reset();
  model.forward(prompt);
  std::vector<int> out;
  while (int(out.size()) < o.max_tokens) {
    const int token = sample_token(model.last_logits(), o.temperature, o.top_k, rng.uniform());
    if (token == o.stop_token) break;
    out.push_back(token);
    if (on_token) on_token(token);
    if (model.position() == T) break;  // the context is full
    model.forward(std::span<const int>(&token, 1));
  }
  return out;
}

}  // namespace fabtrain
