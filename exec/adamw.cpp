// AdamW as PyTorch's torch.optim.AdamW: decoupled weight decay (p -= lr * wd * p, only where the
// decay mask says so), bias-corrected first and second moments. Not here: which parameters
// decay (the stage's param_runs say it) or learning-rate schedules.
#include <cmath>
#include <cstdint>

#include "common/error.hpp"
#include "exec/gpt2_stage.hpp"
#include "exec/kernels_vector.hpp"

namespace fabtrain {
namespace {

struct AdamWConstants {
  float beta1, beta2, eps, step_size, inv_sqrt_c2, lr_decay;
};

[[gnu::always_inline]] inline void adamw_element(float& p, float g, float& m, float& v,
                                                 float decay, const AdamWConstants& k) {
  const float mi = k.beta1 * m + (1.0f - k.beta1) * g;
  const float vi = k.beta2 * v + (1.0f - k.beta2) * g * g;
  m = mi;
  v = vi;
  p -= k.step_size * mi / (std::sqrt(vi) * k.inv_sqrt_c2 + k.eps) + decay * p;
}

// One thread's share of the update; mask null means every element decays. Two loops, so that
// neither loads the mask conditionally (which would stop vectorisation). Not cloned for AVX-512
// like the kernels: GCC does not vectorise sqrt in clones (its errno branch stays), and the
// update is bound by memory (28 bytes per parameter) more than by arithmetic.
void adamw_range(float* p, const float* g, float* m, float* v, const unsigned char* mask,
                 std::int64_t begin, std::int64_t end, const AdamWConstants& k) {
  if (!mask) {
#pragma omp simd
    for (std::int64_t i = begin; i < end; ++i) adamw_element(p[i], g[i], m[i], v[i], k.lr_decay, k);
  } else {
#pragma omp simd
    for (std::int64_t i = begin; i < end; ++i)
      adamw_element(p[i], g[i], m[i], v[i], mask[i] ? k.lr_decay : 0.0f, k);
  }
}

}  // namespace

void AdamW::update(std::span<float> params, std::span<const float> grads, std::span<float> m,
                   std::span<float> v, std::span<const unsigned char> decay_mask, float lr,
                   int step) const {
  const std::size_t n = params.size();
  if (grads.size() != n || m.size() != n || v.size() != n)
    fail("AdamW: grads ({}), m ({}) and v ({}) must have as many elements as params ({})",
         grads.size(), m.size(), v.size(), n);
  if (!decay_mask.empty() && decay_mask.size() != n)
    fail("AdamW: decay mask has {} entries for {} params (must be equal, or empty for all)",
         decay_mask.size(), n);
  if (step < 1) fail("AdamW: step {} must count from 1", step);
  // Bias corrections folded into two scalars: m_hat / (sqrt(v_hat) + eps)
  //   = (m / c1) / (sqrt(v) / sqrt(c2) + eps), one square root and one division per element.
  const float c1 = 1.0f - std::pow(beta1, float(step));
  const float c2 = 1.0f - std::pow(beta2, float(step));
  const float step_size = lr / c1, inv_sqrt_c2 = 1.0f / std::sqrt(c2);
  const unsigned char* mask = decay_mask.empty() ? nullptr : decay_mask.data();
  const AdamWConstants constants{beta1, beta2, eps, step_size, inv_sqrt_c2, lr * weight_decay};
  kernels::for_thread_ranges(std::int64_t(n), [&](std::int64_t begin, std::int64_t end) {
    adamw_range(params.data(), grads.data(), m.data(), v.data(), mask, begin, end, constants);
  });
}

}  // namespace fabtrain
