// Summing block costs into Forward and Backward instructions (see block_work.hpp).
#include "plan/block_work.hpp"

namespace fabtrain {
namespace {

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
    add_work(f, forward_cost(model, block, b, s, plan.tp, plan.precision, plan.attention));
    f.activation_bytes += activation_bytes(model, block, b, s, plan.tp, plan.precision,
                                           plan.recompute, plan.attention);
    all_replicated = all_replicated && replicated_over_tp(block);
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
    add_work(bw, backward_cost(model, block, b, s, plan.tp, plan.precision, plan.attention));
    // Recomputation rebuilds the layers' activations; the embedding and head keep theirs.
    if (plan.recompute && !replicated_over_tp(block)) {
      add_work(bw, forward_cost(model, block, b, s, plan.tp, plan.precision, plan.attention));
      bw.recompute = true;
    }
    bw.activation_bytes += activation_bytes(model, block, b, s, plan.tp, plan.precision,
                                            plan.recompute, plan.attention);
    bw.logits_gradient_bytes += logits_fp32_bytes(model, block, b, s);
    all_replicated = all_replicated && replicated_over_tp(block);
  }
  bw.replicas = all_replicated ? plan.tp : 1;
  return bw;
}

}  // namespace fabtrain
