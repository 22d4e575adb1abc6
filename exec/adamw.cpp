// AdamW as PyTorch's torch.optim.AdamW: decoupled weight decay (p -= lr * wd * p, only where the
// decay mask says so), bias-corrected first and second moments. Not here: which parameters
// decay (the stage's param_runs say it) or learning-rate schedules.
#include <cmath>

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
  const float correction1 = 1.0f - std::pow(beta1, float(step));
  const float correction2 = 1.0f - std::pow(beta2, float(step));
  const bool all_decay = decay_mask.empty();
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / correction1;
    const float v_hat = vi / correction2;
    const float decay = (all_decay || decay_mask[i]) ? weight_decay : 0.0f;
    params[i] -= lr * (m_hat / (std::sqrt(v_hat) + eps) + decay * params[i]);
  }
}

}  // namespace fabtrain
