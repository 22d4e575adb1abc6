// The vectorised element-wise kernels against libm: exp_nonpositive over its whole range, GELU
// forward and backward against the tanh formula in double, and the softmax cross-entropy against
// a plain log-sum-exp; AdamW's SIMD body against its scalar tail. Whichever clone the CPU picks
// (AVX-512, AVX2, baseline) must pass.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "exec/model/gpt2_stage.hpp"
#include "exec/model/kernels.hpp"
#include "exec/model/kernels_vector.hpp"

using namespace fabtrain;

TEST_CASE("exp_nonpositive is within 2e-7 relative of exp on [-87, 0] and 0-safe below") {
  double worst = 0;
  for (float x = -87.0f; x <= 0.0f; x += 0.00173f) {
    const double ref = std::exp(double(x));
    worst = std::max(worst, std::abs(kernels::exp_nonpositive(x) - ref) / ref);
  }
  CHECK(worst < 2e-7);
  CHECK(kernels::exp_nonpositive(0.0f) == 1.0f);
  CHECK(kernels::exp_nonpositive(-1000.0f) >= 0.0f);
  CHECK(kernels::exp_nonpositive(-1000.0f) < 1e-37f);
}

TEST_CASE("GELU forward and backward match the tanh formula computed in double") {
  std::vector<float> x, dout;
  for (float v = -12.0f; v <= 12.0f; v += 0.0137f) {
    x.push_back(v);
    dout.push_back(0.5f + 0.25f * std::sin(v));
  }
  std::vector<float> y(x.size()), dx(x.size());
  kernels::gelu_forward(y.data(), x.data(), std::int64_t(x.size()));
  kernels::gelu_backward(dx.data(), x.data(), dout.data(), std::int64_t(x.size()));
  const double k = std::sqrt(2.0 / M_PI), a = 0.044715;
  double worst_y = 0, worst_dx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], th = std::tanh(k * (v + a * v * v * v));
    const double ref_y = 0.5 * v * (1 + th);
    const double ref_dx =
        (0.5 * (1 + th) + 0.5 * v * (1 - th * th) * k * (1 + 3 * a * v * v)) * dout[i];
    worst_y = std::max(worst_y, std::abs(y[i] - ref_y) / std::max(1.0, std::abs(ref_y)));
    worst_dx = std::max(worst_dx, std::abs(dx[i] - ref_dx));
  }
  CHECK(worst_y < 1e-6);
  CHECK(worst_dx < 1e-6);
}

TEST_CASE("cross-entropy: log-sum-exp, mean loss and d(loss)/d(logits) match double precision") {
  const int n = 5, v = 1000, vp = 1024;
  std::vector<float> logits(std::size_t(n) * vp, 123.0f), lse(n), rows(n);  // padding ignored
  std::vector<int> targets = {0, 999, 500, 7, 42};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < v; ++j) logits[std::size_t(i) * vp + j] = 8.0f * std::sin(0.37f * j + i);
  const std::vector<float> original = logits;
  kernels::crossentropy_forward(lse.data(), rows.data(), logits.data(), targets.data(), n, v, vp);
  double total = 0;  // the stage's mean: the rows summed in order, in double
  for (float r : rows) total += r;
  const float loss = float(total / n);
  kernels::crossentropy_backward(logits.data(), lse.data(), targets.data(), n, v, vp);
  double ref_loss = 0, worst_grad = 0;
  for (int i = 0; i < n; ++i) {
    const float* row = original.data() + std::size_t(i) * vp;
    double sum = 0;
    for (int j = 0; j < v; ++j) sum += std::exp(double(row[j]));
    const double ref_lse = std::log(sum);
    CHECK(lse[i] == doctest::Approx(ref_lse).epsilon(1e-6));
    ref_loss += (ref_lse - row[targets[i]]) / n;
    for (int j = 0; j < vp; ++j) {
      const double ref = j < v ? (std::exp(row[j] - ref_lse) - (j == targets[i])) / n : 0.0;
      worst_grad = std::max(worst_grad, std::abs(logits[std::size_t(i) * vp + j] - ref));
    }
  }
  CHECK(loss == doctest::Approx(ref_loss).epsilon(1e-6));
  CHECK(worst_grad < 1e-7);
}

TEST_CASE("AdamW gives the same bits whether an element falls in the SIMD body or the tail") {
  // A ZeRO shard cuts the parameters at other places than the whole vector: the update of an
  // element must not depend on where the cut falls.
  const int n = 1003;
  std::vector<float> p(n), g(n), m(n), v(n);
  std::vector<unsigned char> mask(n);
  for (int i = 0; i < n; ++i) {
    p[i] = std::sin(0.1f * i);
    g[i] = (i % 17 == 0) ? 0.0f : 0.01f * std::cos(0.7f * i);
    m[i] = 0.001f * std::sin(0.3f * i);
    v[i] = 1e-6f * (1.0f + std::cos(0.5f * i));
    mask[i] = (i / 5) % 2;
  }
  AdamW adamw;
  auto whole_p = p, whole_m = m, whole_v = v;
  adamw.update(whole_p, g, whole_m, whole_v, mask, 1e-3f, 3);
  auto cut_p = p, cut_m = m, cut_v = v;
  for (auto [first, length] : {std::pair{0, 1}, std::pair{1, 6}, std::pair{7, n - 7}}) {
    const std::size_t begin = first, count = length;  // clang 14 cannot capture structured bindings
    auto sub = [&](std::vector<float>& x) { return std::span<float>(x).subspan(begin, count); };
    adamw.update(sub(cut_p), std::span<const float>(g).subspan(begin, count), sub(cut_m),
                 sub(cut_v), std::span<const unsigned char>(mask).subspan(begin, count), 1e-3f, 3);
  }
  CHECK(std::memcmp(whole_p.data(), cut_p.data(), n * sizeof(float)) == 0);
  CHECK(std::memcmp(whole_m.data(), cut_m.data(), n * sizeof(float)) == 0);
  CHECK(std::memcmp(whole_v.data(), cut_v.data(), n * sizeof(float)) == 0);
  // And the update moved the parameters, decayed or not as the mask says.
  int moved = 0;
  for (int i = 0; i < n; ++i) moved += whole_p[i] != p[i];
  CHECK(moved > n / 2);
}
