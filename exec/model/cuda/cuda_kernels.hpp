// The CUDA kernels of GPT-2 in fp32 that are not matrix products (those are cuBLAS calls in
// cuda_gemm.hpp): LayerNorm, GELU, causal softmax (the attention's matrix products are cuBLAS),
// cross-entropy over the first V of Vp columns, embedding, residual and bias additions, column
// sums and AdamW. Same shapes and the same set/accumulate rules as the CPU kernels
// (exec/model/kernels.hpp), which are the reference. All pointers are device memory; every launcher
// enqueues on `stream` and returns at once (the caller checks cudaGetLastError()). Reductions
// over rows go through fixed-size partial sums added in a fixed order, so a rerun gives the same
// bits (resume must be bit-identical). This header is plain C++ so .cpp files can include it.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace fabtrain::cuda {

// Rows per partial sum of column_sums_add; the scratch it needs is
// column_sums_scratch(n, cols) floats.
constexpr int kColumnSumRows = 256;
inline std::int64_t column_sums_scratch(int n, int cols) {
  return std::int64_t((n + kColumnSumRows - 1) / kColumnSumRows) * cols;
}
// dst(c) += sum over the n rows of src(n, cols), deterministic.
void column_sums_add(float* dst, const float* src, int n, int cols, float* scratch,
                     cudaStream_t stream);

// out(n, c) += bias(c) on every row.
void add_bias_rows(float* out, const float* bias, int n, int c, cudaStream_t stream);

// out = (x - mean) * rstd * w + b per row; saves mean and rstd. eps 1e-5.
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int n, int c, cudaStream_t stream);
// dx += LayerNorm backward of dout; dw, db += their gradients. scratch: n*c + column sums.
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int n, int c,
                        float* scratch, cudaStream_t stream);

// GELU (tanh approximation); backward sets dx = gelu'(x) * dout (dx may alias dout).
void gelu_forward(float* out, const float* x, std::int64_t count, cudaStream_t stream);
void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t count,
                   cudaStream_t stream);

// att holds rows (rows = b*nh*t, each of t scores already scaled); row i of each t x t matrix
// becomes the softmax over its columns j <= i % t, zero above the diagonal. In place.
void causal_softmax_forward(float* att, std::int64_t rows, int t, cudaStream_t stream);
// datt -> d(pre-softmax scores) * scale, in place: att * (datt - sum_j att*datt) * scale.
void causal_softmax_backward(float* datt, const float* att, std::int64_t rows, int t, float scale,
                             cudaStream_t stream);

// Per row of logits (n, vp): lse = log-sum-exp over the first v columns, row_loss = lse - logit
// of the target.
void crossentropy_forward(float* lse, float* row_loss, const float* logits, const int* targets,
                          int n, int v, int vp, cudaStream_t stream);
// logits -> (softmax - onehot) / n over the first v columns, 0 in the padding. In place.
void crossentropy_backward(float* logits, const float* lse, const int* targets, int n, int v,
                           int vp, cudaStream_t stream);

// out(i) = wte(tokens[i]) + wpe(i % t).
void embedding_forward(float* out, const int* tokens, const float* wte, const float* wpe, int n,
                       int t, int c, cudaStream_t stream);
// dwte(token) += the rows of dout with that token, in row order: rows_by_token lists row indices
// grouped by token (ascending rows within a group), group_start[g]..group_start[g+1] is group g
// of token group_token[g]. dwpe(p) += rows p, p+t, ... in order.
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int* rows_by_token,
                        const int* group_start, const int* group_token, int groups, int n, int t,
                        int c, cudaStream_t stream);

// out = a + b + bias (row-broadcast).
void residual_add(float* out, const float* a, const float* b, const float* bias, int n, int c,
                  cudaStream_t stream);

// AdamW as exec/model/adamw.cpp (decay_mask may be null: all decay); step counts from 1.
void adamw_update(float* params, const float* grads, float* m, float* v,
                  const unsigned char* decay_mask, std::int64_t count, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int step, cudaStream_t stream);

// The optimizer's element-wise work, where the parameters live (the stage's device optimizer).
// data *= factor.
void scale(float* data, std::int64_t count, float factor, cudaStream_t stream);
// dst += src.
void add_into(float* dst, const float* src, std::int64_t count, cudaStream_t stream);
// Elements per partial sum of masked_square_sum; its scratch is masked_square_sum_scratch(count)
// doubles (the partials, then the result).
constexpr std::int64_t kSquareSumChunk = 1 << 16;
inline std::int64_t masked_square_sum_scratch(std::int64_t count) {
  return (count + kSquareSumChunk - 1) / kSquareSumChunk + 1;
}
// scratch[last] = the sum over i with mask[i] != 0 of data[i]^2, in double: each chunk summed in
// a fixed tree, then the chunks in order (deterministic). Returns the result's address.
double* masked_square_sum(const float* data, const float* mask, std::int64_t count, double* scratch,
                          cudaStream_t stream);
// dst(i) = src(i) rounded to bf16 (bf16 true) or fp16, to nearest with ties to even, as their bit
// patterns (exec/model/half_rounding.hpp): the operands of a 16-bit matrix product.
void round_to_16bit(std::uint16_t* dst, const float* src, std::int64_t count, bool bf16,
                    cudaStream_t stream);
// AdamW as adamw_update, the gradient multiplied by grad_scale first (clipping, as the host's
// in-place scale does), decay as a 0/1 float mask.
void adamw_update_scaled(float* params, const float* grads, float* m, float* v, const float* decay,
                         std::int64_t count, float lr, float beta1, float beta2, float eps,
                         float weight_decay, int step, float grad_scale, cudaStream_t stream);

}  // namespace fabtrain::cuda
