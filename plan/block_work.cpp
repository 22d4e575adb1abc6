// Summing block costs into Forward and Backward instructions (see block_work.hpp).
#include "plan/block_work.hpp"

namespace fabtrain {

Forward forward_of(const ModelSpec& model, const Plan& plan, int b, int s, int mb, int begin,
                   int end) {
  Forward f{mb, begin, end};
  bool all_replicated = true;
  for (int i = begin; i < end; ++i) {
    const Block block = block_at(model, i);
    const WorkCost w = forward_cost(model, block, b, s, plan.tp, plan.precision, plan.attention);
    f.flops += w.flops;
    f.bytes += w.bytes;
    f.matmul_bytes += w.matmul_bytes;
    f.attention_flops += w.attention_flops;
    f.attention_bytes += w.attention_bytes;
    f.kernels += w.kernels;
    add_products(f.products, w.products);
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
    const WorkCost w = backward_cost(model, block, b, s, plan.tp, plan.precision, plan.attention);
    bw.flops += w.flops;
    bw.bytes += w.bytes;
    bw.matmul_bytes += w.matmul_bytes;
    bw.attention_flops += w.attention_flops;
    bw.attention_bytes += w.attention_bytes;
    bw.kernels += w.kernels;
    add_products(bw.products, w.products);
    // Recomputation rebuilds the layers' activations; the embedding and head keep theirs.
    if (plan.recompute && !replicated_over_tp(block)) {
      const WorkCost again =
          forward_cost(model, block, b, s, plan.tp, plan.precision, plan.attention);
      bw.flops += again.flops;
      bw.bytes += again.bytes;
      bw.matmul_bytes += again.matmul_bytes;
      bw.attention_flops += again.attention_flops;
      bw.attention_bytes += again.attention_bytes;
      bw.kernels += again.kernels;
      add_products(bw.products, again.products);
      bw.recompute = true;
    }
    bw.activation_bytes += activation_bytes(model, block, b, s, plan.tp, plan.precision,
                                            plan.recompute, plan.attention);
    all_replicated = all_replicated && replicated_over_tp(block);
  }
  bw.replicas = all_replicated ? plan.tp : 1;
  return bw;
}

}  // namespace fabtrain
