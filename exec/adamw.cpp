// AdamW as PyTorch's torch.optim.AdamW: decoupled weight decay (p -= lr * wd * p, only where the
// decay mask says so), bias-corrected first and second moments. Not here: which parameters
// decay (the stage's param_runs say it) or learning-rate schedules.
#include <cmath>
#include <cstdint>

#include "common/error.hpp"
#include "exec/gpt2_stage.hpp"

namespace fabtrain {

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
  const float lr_decay = lr * weight_decay;
  const bool all_decay = decay_mask.empty();
  float* p = params.data();
  const float* g = grads.data();
  float* pm = m.data();
  float* pv = v.data();
  const unsigned char* mask = decay_mask.data();
  const std::int64_t count = std::int64_t(n);
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    const float gi = g[i];
    const float mi = beta1 * pm[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * pv[i] + (1.0f - beta2) * gi * gi;
    pm[i] = mi;
    pv[i] = vi;
    const float decay = (all_decay || mask[i]) ? lr_decay : 0.0f;
    p[i] -= step_size * mi / (std::sqrt(vi) * inv_sqrt_c2 + eps) + decay * p[i];
  }
}

}  // namespace fabtrain
