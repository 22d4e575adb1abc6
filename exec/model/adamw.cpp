// AdamW as PyTorch's torch.optim.AdamW: decoupled weight decay (p -= lr * wd * p, only where the
// decay mask says so), bias-corrected first and second moments. Not here: which parameters
// decay (the stage's param_runs say it) or learning-rate schedules.
#include <cmath>
#include <cstdint>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "common/error.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/kernels_vector.hpp"

namespace fabtrain {
namespace {

struct AdamWConstants {
  float beta1, beta2, eps, step_size, inv_sqrt_c2, lr_decay;
};

[[gnu::always_inline]] inline void adamw_element(float& p, float g, float& m, float& v, float decay,
                                                 const AdamWConstants& k) {
  const float mi = k.beta1 * m + (1.0f - k.beta1) * g;
  const float vi = k.beta2 * v + ((1.0f - k.beta2) * g) * g;
  m = mi;
  v = vi;
  p = p - ((k.step_size * mi) / (std::sqrt(vi) * k.inv_sqrt_c2 + k.eps) + decay * p);
}

// One thread's share of the update; mask null means every element decays. GCC does not
// vectorise std::sqrt in a loop (its errno branch stays), so the body is written out with SSE
// (in every x86-64) in exactly the scalar operation order: an element gets the same bits
// whether it lands in the vector body or in the tail, which keeps ZeRO shards (cut at other
// places) bit-identical to the whole. The update is bound by memory (28 bytes per parameter).
void adamw_range(float* p, const float* g, float* m, float* v, const unsigned char* mask,
                 std::int64_t begin, std::int64_t end, const AdamWConstants& k) {
  std::int64_t i = begin;
#if defined(__SSE2__)
  const __m128 beta1 = _mm_set1_ps(k.beta1), one_minus_beta1 = _mm_set1_ps(1.0f - k.beta1);
  const __m128 beta2 = _mm_set1_ps(k.beta2), one_minus_beta2 = _mm_set1_ps(1.0f - k.beta2);
  const __m128 eps = _mm_set1_ps(k.eps), step_size = _mm_set1_ps(k.step_size);
  const __m128 inv_sqrt_c2 = _mm_set1_ps(k.inv_sqrt_c2), lr_decay = _mm_set1_ps(k.lr_decay);
  for (; i + 4 <= end; i += 4) {
    const __m128 gi = _mm_loadu_ps(g + i);
    const __m128 mi =
        _mm_add_ps(_mm_mul_ps(beta1, _mm_loadu_ps(m + i)), _mm_mul_ps(one_minus_beta1, gi));
    const __m128 vi = _mm_add_ps(_mm_mul_ps(beta2, _mm_loadu_ps(v + i)),
                                 _mm_mul_ps(_mm_mul_ps(one_minus_beta2, gi), gi));
    _mm_storeu_ps(m + i, mi);
    _mm_storeu_ps(v + i, vi);
    __m128 decay = lr_decay;
    if (mask) {
      const __m128i bytes = _mm_setr_epi32(mask[i], mask[i + 1], mask[i + 2], mask[i + 3]);
      decay = _mm_and_ps(lr_decay, _mm_castsi128_ps(_mm_cmpgt_epi32(bytes, _mm_setzero_si128())));
    }
    const __m128 pi = _mm_loadu_ps(p + i);
    const __m128 denom = _mm_add_ps(_mm_mul_ps(_mm_sqrt_ps(vi), inv_sqrt_c2), eps);
    const __m128 change =
        _mm_add_ps(_mm_div_ps(_mm_mul_ps(step_size, mi), denom), _mm_mul_ps(decay, pi));
    _mm_storeu_ps(p + i, _mm_sub_ps(pi, change));
  }
#endif
  for (; i < end; ++i)
    adamw_element(p[i], g[i], m[i], v[i], (!mask || mask[i]) ? k.lr_decay : 0.0f, k);
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
