// An eager framework's extra kernels, from a profile's counts (see framework_costs.hpp).
#include "models/framework_costs.hpp"

namespace fabtrain {
namespace {

struct Sizes {
  double activation, scores, hidden, logits;  // elements on one rank
};

Sizes sizes_of(const ModelSpec& m, int b, int s, int tp) {
  const double t = double(b) * s;
  // tp: the ranks splitting the block (a vocabulary-parallel head: its logits)
  return {t * m.n_embd, double(b) * m.n_head * s * s / tp, t * m.mlp_width() / tp,
          t * m.vocab_size / tp};
}

}  // namespace

WorkCost framework_extra_cost(const FrameworkProfile& f, const ModelSpec& m, Block block, int b,
                              int s, int tp, Precision p, Attention attention, bool backward) {
  const Sizes n = sizes_of(m, b, s, tp);
  const double e = element_bytes(p);
  WorkCost w;
  // forward: input and output of e bytes, mask written; backward: gradient and mask in, gradient
  // out. Both read or write 2e + mask bytes per element in one kernel.
  auto dropout = [&](bool on, double elements) {
    if (!on) return;
    w.bytes += elements * (2 * e + f.dropout_mask_bytes);
    ++w.kernels;
  };
  auto extra = [&](const ExtraKernels& k, double elements) {
    w.bytes += k.passes * elements * e;
    w.kernels += k.kernels;
  };
  const bool scores = attention != Attention::flash;  // a fused kernel drops out on chip
  switch (block.kind) {
    case BlockKind::embed:
      dropout(f.dropout_embeddings, n.activation);
      break;
    case BlockKind::attn:
      dropout(f.dropout_attention_probs && scores, n.scores);
      if (scores) extra(backward ? f.scores_backward : f.scores_forward, n.scores);
      dropout(f.dropout_attention_output, n.activation);
      break;
    case BlockKind::mlp:
      extra(backward ? f.activation_backward : f.activation_forward, n.hidden);
      dropout(f.dropout_mlp_output, n.activation);
      break;
    case BlockKind::head:
      extra(backward ? f.logits_backward : f.logits_forward, n.logits);
      break;
  }
  return w;
}

namespace {

// Elements autocast keeps in fp32 where a half-precision model would keep 2-byte ones: each
// layer norm's output and the residual sum (attention and MLP blocks), the softmax's
// probabilities (where the scores are materialised), and the head's log-probabilities.
double autocast_fp32_elements(const Sizes& n, Block block, Attention attention) {
  switch (block.kind) {
    case BlockKind::embed:
      return 0;
    case BlockKind::attn:
      return 2 * n.activation + (attention == Attention::flash ? 0 : n.scores);
    case BlockKind::mlp:
      return 2 * n.activation;
    case BlockKind::head:
      return n.activation + n.logits;
  }
  return 0;
}

}  // namespace

double framework_extra_activation_bytes(const FrameworkProfile& f, const ModelSpec& m, Block block,
                                        int b, int s, int tp, Attention attention, Precision p) {
  const Sizes n = sizes_of(m, b, s, tp);
  const double autocast =
      f.autocast && element_bytes(p) == 2 ? 2 * autocast_fp32_elements(n, block, attention) : 0;
  double elements = 0;
  switch (block.kind) {
    case BlockKind::embed:
      elements = f.dropout_embeddings ? n.activation : 0;
      break;
    case BlockKind::attn:
      elements = (f.dropout_attention_probs && attention != Attention::flash ? n.scores : 0) +
                 (f.dropout_attention_output ? n.activation : 0);
      break;
    case BlockKind::mlp:
      elements = f.dropout_mlp_output ? n.activation : 0;
      break;
    case BlockKind::head:
      break;
  }
  return elements * f.dropout_mask_bytes + autocast;
}

int parameter_tensors(const ModelSpec& m, Block block) {
  switch (block.kind) {
    case BlockKind::embed:
      return 2;  // wte, wpe
    case BlockKind::attn:
    case BlockKind::mlp:
      return 6;  // layer norm, two products: a weight and a bias each
    case BlockKind::head:
      return 2 + (m.tie_word_embeddings ? 0 : 1);  // final layer norm, an untied output matrix
  }
  return 0;
}

}  // namespace fabtrain
