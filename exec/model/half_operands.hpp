// The 16-bit operand scratch of the CUDA backend's bf16 and fp16 products
// (exec/model/cuda/cuda_gemm.hpp): every product rounds its two fp32 operands into two grow-only
// device arrays, one for the first operand and one for the second, so a stage holds, for the
// whole run, the largest first operand plus the largest second operand over all its products, at
// 2 bytes an element. An operand's size is the span of elements it reaches from its first
// (batched, strided operands such as the attention's heads read out of the qkv rows included).
// Pure host arithmetic: the memory check sizes the scratch before anything is allocated.
// Not here: the rounding (half_rounding.hpp), the products themselves.
#pragma once
#include <cstdint>

#include "models/model_spec.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

// Elements a batched row-major operand spans from its first: `batch` matrices `stride` apart,
// each of `rows` x `cols` (as op(X) is used; transposed: stored as cols x rows) with stored rows
// `ld` apart.
std::int64_t operand_span(bool transposed, int rows, int cols, int ld, long long stride, int batch);

// The elements of the largest first and second operand over a set of products.
struct OperandSpans {
  std::int64_t first = 0, second = 0;
  void cover(const OperandSpans& other);
  double bytes() const { return 2.0 * double(first + second); }  // as 16-bit elements
};

// A linear layer of n rows, in_dim -> out_dim: its forward and backward products (the input's
// gradient and the weight's).
OperandSpans linear_operand_spans(int n, int in_dim, int out_dim);
// Causal attention of one sequence of t tokens, nh heads of hd, read out of (t, 3*nh*hd) qkv rows:
// its forward and backward products, each batched over the heads.
OperandSpans attention_operand_spans(int t, int nh, int hd);

// The scratch of one pipeline stage of the plan (its tensor-parallel shard) at `microbatch`
// sequences of `seq` tokens, over every product its forward and backward run.
OperandSpans stage_operand_spans(const ModelSpec& model, const Plan& plan, int stage,
                                 int microbatch, int seq);

}  // namespace fabtrain
