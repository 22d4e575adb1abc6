// GPT-2 inference on the CPU with a key-value cache: the forward of exec/model/gpt2_stage.hpp (same
// kernels, same order of operations) for one sequence, where each call runs only the new tokens
// and attends to the keys and values of every earlier position, kept per layer. So a prompt is
// one call of n tokens and each sampled token one call of one token (a position, not a whole
// forward pass). One rank, the whole model, fp32. Not here: tokenizing, sampling, pooling.
#pragma once
#include <span>
#include <vector>

#include "models/model_spec.hpp"

namespace fabtrain {

class Gpt2Inference {
 public:
  // full: the full llm.c parameter vector of the model (exec/model/kernels_layout.hpp).
  Gpt2Inference(const ModelSpec& model, std::vector<float> full);

  const ModelSpec& model() const { return m_; }
  int position() const { return pos_; }  // tokens in the cache
  void reset() { pos_ = 0; }

  // Runs tokens at positions [position(), position() + n), adding their keys and values to the
  // cache. More than the context (n_ctx positions in all) is an Error.
  void forward(std::span<const int> tokens);
  // After forward(): the final LayerNorm's output for its n tokens (n x C), and the logits
  // (first V of Vp) of its last token.
  std::span<const float> hidden() const { return {hidden_.data(), std::size_t(n_) * m_.n_embd}; }
  std::vector<float> last_logits() const;

 private:
  void attention(int layer, int n);  // y = causal attention of the n new queries over the cache

  ModelSpec m_;
  std::vector<float> p_;
  std::vector<float> k_cache_, v_cache_;  // (L, n_ctx, C) each, heads side by side as in qkv
  std::vector<float> x_, ln_, qkv_, y_, part_, h_, g_, hidden_, mean_, rstd_, att_;
  int pos_ = 0, n_ = 0;
};

}  // namespace fabtrain
