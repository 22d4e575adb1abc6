// GPT-2 inference with a key-value cache (see gpt2_infer.hpp).
#include "exec/model/gpt2_infer.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "exec/model/kernels.hpp"
#include "exec/model/kernels_layout.hpp"

namespace fabtrain {

Gpt2Inference::Gpt2Inference(const ModelSpec& model, std::vector<float> full)
    : m_(model), p_(std::move(full)) {
  validate(m_);
  const FullLayout layout = full_layout(m_);
  if (std::int64_t(p_.size()) != layout.total)
    fail("model {}: {} parameters given, its llm.c layout holds {}", m_.name, p_.size(),
         layout.total);
  const std::size_t cache = std::size_t(m_.n_layer) * m_.n_ctx * m_.n_embd;
  k_cache_.assign(cache, 0.0f);
  v_cache_.assign(cache, 0.0f);
}

void Gpt2Inference::attention(int l, int n) {
  const int C = m_.n_embd, NH = m_.n_head, hd = m_.head_dim(), T = m_.n_ctx;
  const float* kc = k_cache_.data() + std::size_t(l) * T * C;
  const float* vc = v_cache_.data() + std::size_t(l) * T * C;
  att_.resize(std::size_t(n) * NH * T);
#pragma omp parallel for collapse(2) schedule(static)
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < NH; ++h)
      kernels::attention_row(
          y_.data() + std::size_t(i) * C + h * hd, att_.data() + (std::size_t(i) * NH + h) * T,
          qkv_.data() + std::size_t(i) * 3 * C + h * hd, kc + h * hd, vc + h * hd, C, pos_ + i, hd);
}

void Gpt2Inference::forward(std::span<const int> tokens) {
  const int n = int(tokens.size()), C = m_.n_embd, T = m_.n_ctx, L = m_.n_layer;
  if (n == 0) fail("Gpt2Inference::forward: no tokens");
  if (pos_ + n > T)
    fail("{} tokens do not fit the context of {} positions of model {} ({} already used)", n, T,
         m_.name, pos_);
  for (int tok : tokens)
    if (tok < 0 || tok >= m_.vocab_size)
      fail("token {} is outside the vocabulary of {} of model {}", tok, m_.vocab_size, m_.name);
  const FullLayout lay = full_layout(m_);
  auto P = [&](FullTensor t, int layer = -1) { return p_.data() + lay.at(t, layer, L); };
  const std::size_t nc = std::size_t(n) * C;
  x_.resize(nc), ln_.resize(nc), y_.resize(nc), part_.resize(nc), hidden_.resize(nc);
  qkv_.resize(3 * nc), h_.resize(4 * nc), g_.resize(4 * nc), mean_.resize(n), rstd_.resize(n);

  kernels::embedding_forward(x_.data(), tokens.data(), P(t_wte), P(t_wpe) + std::size_t(pos_) * C,
                             n, n, C);
  for (int l = 0; l < L; ++l) {
    kernels::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), P(t_ln1w, l),
                               P(t_ln1b, l), n, C);
    kernels::linear_forward(qkv_.data(), ln_.data(), P(t_qkvw, l), P(t_qkvb, l), n, C, 3 * C);
    float* kc = k_cache_.data() + (std::size_t(l) * T + pos_) * C;
    float* vc = v_cache_.data() + (std::size_t(l) * T + pos_) * C;
    for (int i = 0; i < n; ++i) {
      const float* row = qkv_.data() + std::size_t(i) * 3 * C;
      std::copy(row + C, row + 2 * C, kc + std::size_t(i) * C);
      std::copy(row + 2 * C, row + 3 * C, vc + std::size_t(i) * C);
    }
    attention(l, n);
    kernels::linear_forward(part_.data(), y_.data(), P(t_attprojw, l), nullptr, n, C, C);
    kernels::residual_add(x_.data(), x_.data(), part_.data(), P(t_attprojb, l), n, C);
    kernels::layernorm_forward(ln_.data(), mean_.data(), rstd_.data(), x_.data(), P(t_ln2w, l),
                               P(t_ln2b, l), n, C);
    kernels::linear_forward(h_.data(), ln_.data(), P(t_fcw, l), P(t_fcb, l), n, C, 4 * C);
    kernels::gelu_forward(g_.data(), h_.data(), std::int64_t(4 * nc));
    kernels::linear_forward(part_.data(), g_.data(), P(t_fcprojw, l), nullptr, n, 4 * C, C);
    kernels::residual_add(x_.data(), x_.data(), part_.data(), P(t_fcprojb, l), n, C);
  }
  kernels::layernorm_forward(hidden_.data(), mean_.data(), rstd_.data(), x_.data(), P(t_lnfw),
                             P(t_lnfb), n, C);
  pos_ += n;
  n_ = n;
}

std::vector<float> Gpt2Inference::last_logits() const {
  if (n_ == 0) fail("Gpt2Inference::last_logits: no forward yet");
  const int C = m_.n_embd, Vp = m_.padded_vocab();
  std::vector<float> logits(static_cast<std::size_t>(Vp));
  const FullLayout lay = full_layout(m_);
  kernels::linear_forward(logits.data(), hidden_.data() + std::size_t(n_ - 1) * C,
                          p_.data() + lay.offset[t_wte], nullptr, 1, C, Vp);
  logits.resize(std::size_t(m_.vocab_size));
  return logits;
}

}  // namespace fabtrain
