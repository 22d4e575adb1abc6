// The 16-bit operand scratch of a stage's products (see half_operands.hpp). Each product below
// is one call of CudaGemm::gemm, with its operands as that call passes them.
#include "exec/model/half_operands.hpp"

#include <algorithm>

#include "models/costs.hpp"

namespace fabtrain {
namespace {

// One product C(m, n) = op(A)(m, k) . op(B)(k, n), batched.
struct Product {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0;
  int lda = 0;
  long long stride_a = 0;
  int ldb = 0;
  long long stride_b = 0;
  int batch = 1;
};

OperandSpans spans_of(const Product& p) {
  return {operand_span(p.trans_a, p.m, p.k, p.lda, p.stride_a, p.batch),
          operand_span(p.trans_b, p.k, p.n, p.ldb, p.stride_b, p.batch)};
}

}  // namespace

std::int64_t operand_span(bool transposed, int rows, int cols, int ld, long long stride,
                          int batch) {
  const int stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
  return std::int64_t(batch - 1) * stride + std::int64_t(stored_rows - 1) * ld + stored_cols;
}

void OperandSpans::cover(const OperandSpans& other) {
  first = std::max(first, other.first);
  second = std::max(second, other.second);
}

OperandSpans linear_operand_spans(int n, int in_dim, int out_dim) {
  OperandSpans spans;
  // out = in . w^T; din = dout . w; dw += dout^T . in
  spans.cover(spans_of({false, true, n, out_dim, in_dim, in_dim, 0, in_dim, 0}));
  spans.cover(spans_of({false, false, n, in_dim, out_dim, out_dim, 0, in_dim, 0}));
  spans.cover(spans_of({true, false, out_dim, in_dim, n, out_dim, 0, in_dim, 0}));
  return spans;
}

OperandSpans attention_operand_spans(int t, int nh, int hd) {
  const int c = nh * hd, c3 = 3 * c;
  const long long tt = (long long)t * t;
  OperandSpans spans;
  // Forward: scores = Q K^T; y = att V.
  spans.cover(spans_of({false, true, t, t, hd, c3, hd, c3, hd, nh}));
  spans.cover(spans_of({false, false, t, hd, t, t, tt, c3, hd, nh}));
  // Backward: datt = dY V^T; dV = att^T dY; dQ = dpre K; dK = dpre^T Q.
  spans.cover(spans_of({false, true, t, t, hd, c, hd, c3, hd, nh}));
  spans.cover(spans_of({true, false, t, hd, t, t, tt, c, hd, nh}));
  spans.cover(spans_of({false, false, t, hd, t, t, tt, c3, hd, nh}));
  spans.cover(spans_of({true, false, t, hd, t, t, tt, c3, hd, nh}));
  return spans;
}

OperandSpans stage_operand_spans(const ModelSpec& model, const Plan& plan, int stage,
                                 int microbatch, int seq) {
  const BlockRange blocks = stage_blocks(model, plan).at(stage);
  const int n = microbatch * seq, c = model.n_embd, hd = model.head_dim();
  OperandSpans spans;
  for (int i = blocks.begin; i < blocks.end; ++i) {
    const Block block = block_at(model, i);
    const int nh_local = model.n_head / split_of(plan, block), c_local = nh_local * hd;
    switch (block.kind) {
      case BlockKind::embed:
        break;
      case BlockKind::attn:
        spans.cover(linear_operand_spans(n, c, 3 * c_local));
        spans.cover(attention_operand_spans(seq, nh_local, hd));
        spans.cover(linear_operand_spans(n, c_local, c));
        break;
      case BlockKind::mlp:
        spans.cover(linear_operand_spans(n, c, 4 * c_local));
        spans.cover(linear_operand_spans(n, 4 * c_local, c));
        break;
      case BlockKind::head:  // the logits through the tied wte, whole on every tp rank
        spans.cover(linear_operand_spans(n, c, model.padded_vocab()));
        break;
    }
  }
  return spans;
}

}  // namespace fabtrain
