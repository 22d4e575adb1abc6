// What an eager framework adds to a block's kernel list (models/costs.hpp counts one kernel per
// operation of a fused, dropout-free block): dropout kernels and their masks, an activation run
// as several element-wise kernels (Hugging Face's gelu_new), an additive attention mask, a loss
// that copies the shifted logits, and the launches an optimizer, gradient clipping, zero_grad and
// DDP's bucket copies make per parameter tensor when they loop over tensors instead of running
// foreach or fused kernels. The numbers of a profile are data (calibrate/data/published_runs.yaml,
// framework_profiles:, each with its source); these functions only turn them into work.
// Not here: reading a profile (calibrate/framework_profile.hpp), or which runs use one.
#pragma once
#include <string>

#include "models/costs.hpp"
#include "models/model_spec.hpp"

namespace fabtrain {

// Extra element-wise kernels over one tensor: kernel launches and passes over it (each pass
// reads or writes the whole tensor once).
struct ExtraKernels {
  int kernels = 0;
  double passes = 0;
};

struct FrameworkProfile {
  std::string name;
  // Dropout (p > 0) where the framework applies it: on the embeddings' sum, on the attention
  // probabilities, on the attention projection's output and on the MLP's output. Forward: one
  // kernel reading the input and writing the output and a mask of mask_bytes per element;
  // backward: one kernel reading the gradient and the mask and writing the gradient.
  bool dropout_embeddings = false, dropout_attention_probs = false;
  bool dropout_attention_output = false, dropout_mlp_output = false;
  double dropout_mask_bytes = 1;
  // Beyond the one activation kernel costs.hpp counts, over the F-wide hidden.
  ExtraKernels activation_forward, activation_backward;
  // Over the attention scores (b*heads*s*s/tp): an additive padding mask (forward only).
  ExtraKernels scores_forward, scores_backward;
  // Over the logits (t*V): the loss's copy of the shifted logits and its gradient.
  ExtraKernels logits_forward, logits_backward;
  // Launches per parameter tensor after the last backward (optimizer loop, clipping, zero_grad)
  // and, with data parallelism, DDP's per-tensor copies into and out of its buckets.
  int step_kernels_per_tensor = 0;
  int ddp_kernels_per_tensor = 0;
  // Mixed precision by autocast (torch.cuda.amp) rather than a half-precision model: under an
  // fp16 or bf16 plan the layer norms, the softmax and the loss's log-softmax run in fp32 and the
  // residual stream stays fp32, so those kept outputs take 4 bytes an element, not 2.
  bool autocast = false;
  std::string source;
};

// The extra work of one block on one rank for a microbatch of b sequences of s tokens (the
// same sizes forward_cost takes); backward: the gradient kernels.
WorkCost framework_extra_cost(const FrameworkProfile& f, const ModelSpec& m, Block block, int b,
                              int s, int tp, Precision p, Attention attention, bool backward);
// Bytes the framework keeps from forward for backward beyond costs.hpp's activation_bytes: the
// dropout masks, and under autocast the 2 more bytes an element of what it keeps in fp32.
double framework_extra_activation_bytes(const FrameworkProfile& f, const ModelSpec& m, Block block,
                                        int b, int s, int tp, Attention attention, Precision p);
// Parameter tensors of a block as GPT-2's modules hold them (a weight and a bias per layer norm
// and per product; wte and wpe; an untied output matrix).
int parameter_tensors(const ModelSpec& m, Block block);

}  // namespace fabtrain
