// Summing block costs into Forward and Backward instructions (see block_work.hpp).
#include "plan/block_work.hpp"

#include <algorithm>

namespace fabtrain {
namespace {

// What recomputation rebuilds of one block: its activations without recompute, less the input
// that recompute keeps.
double rebuilt_activation_bytes(const ModelSpec& model, Block block, int b, int s,
                                const Plan& plan) {
  const int tp = split_of(plan, block);
  return activation_bytes(model, block, b, s, tp, plan.precision, false, plan.attention) -
         activation_bytes(model, block, b, s, tp, plan.precision, true, plan.attention);
}

// The most a Backward of blocks [begin, end) holds beyond what was kept at its start. It walks
// from end-1 down; recomputation rebuilds a whole layer (attention and MLP, Megatron-LM's and
// torch.utils.checkpoint's unit per transformer layer) before that layer's backward, by when the
// blocks after it in the range have released what they kept (the head its logits).
double rebuilt_peak_bytes(const ModelSpec& model, const Plan& plan, int b, int s, int begin,
                          int end) {
  double released = 0, peak = 0;
  for (int i = end - 1; i >= begin; --i) {
    const Block block = block_at(model, i);
    const bool layer_end =
        block.kind == BlockKind::mlp || (block.kind == BlockKind::attn && i == end - 1);
    if (layer_end) {
      double layer = rebuilt_activation_bytes(model, block, b, s, plan);
      if (block.kind == BlockKind::mlp && i - 1 >= begin &&
          block_at(model, i - 1).kind == BlockKind::attn)
        layer += rebuilt_activation_bytes(model, block_at(model, i - 1), b, s, plan);
      peak = std::max(peak, layer - released);
    }
    released += activation_bytes(model, block, b, s, split_of(plan, block), plan.precision,
                                 plan.recompute, plan.attention);
  }
  return peak;
}

// Adds one block's work to a Forward or Backward (they share these fields).
template <class Instruction>
void add_work(Instruction& into, const WorkCost& w) {
  into.flops += w.flops;
  into.bytes += w.bytes;
  into.matmul_bytes += w.matmul_bytes;
  into.attention_flops += w.attention_flops;
  into.attention_bytes += w.attention_bytes;
  into.kernels += w.kernels;
  add_products(into.products, w.products);
}

}  // namespace

Forward forward_of(const ModelSpec& model, const Plan& plan, int b, int s, int mb, int begin,
                   int end) {
  Forward f{mb, begin, end};
  bool all_replicated = true;
  for (int i = begin; i < end; ++i) {
    const Block block = block_at(model, i);
    const int tp = split_of(plan, block);
    add_work(f, forward_cost(model, block, b, s, tp, plan.precision, plan.attention));
    f.activation_bytes +=
        activation_bytes(model, block, b, s, tp, plan.precision, plan.recompute, plan.attention);
    all_replicated = all_replicated && tp == 1;
  }
  f.replicas = all_replicated ? plan.tp : 1;
  return f;
}

Backward backward_of(const ModelSpec& model, const Plan& plan, int b, int s, int mb, int begin,
                     int end) {
  Backward bw{mb, begin, end};
  bool all_replicated = true;
  for (int i = begin; i < end; ++i) {
    const Block block = block_at(model, i);
    const int tp = split_of(plan, block);
    add_work(bw, backward_cost(model, block, b, s, tp, plan.precision, plan.attention));
    // Recomputation rebuilds the layers' activations; the embedding and head keep theirs.
    if (plan.recompute && !replicated_over_tp(block)) {
      add_work(bw, forward_cost(model, block, b, s, tp, plan.precision, plan.attention));
      bw.recompute = true;
    }
    bw.activation_bytes +=
        activation_bytes(model, block, b, s, tp, plan.precision, plan.recompute, plan.attention);
    bw.logits_gradient_bytes += logits_fp32_bytes(model, block, b, s, tp);
    all_replicated = all_replicated && tp == 1;
  }
  bw.replicas = all_replicated ? plan.tp : 1;
  if (bw.recompute) bw.rebuilt_bytes = rebuilt_peak_bytes(model, plan, b, s, begin, end);
  return bw;
}

}  // namespace fabtrain
