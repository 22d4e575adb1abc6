// The CPU kernels of GPT-2 in fp32, one function per operation, forward and backward: linear
// layers through BLAS (cblas_sgemm), LayerNorm, GELU, causal attention, softmax cross-entropy and
// the embedding lookup with OpenMP. Row-major activations (rows = the n = b*t tokens), weights in
// llm.c's (out, in) layout. Backward functions ACCUMULATE into weight gradients (+=) and say
// whether they set or add the input gradient. Not here: which block runs which kernel
// (gpt2_stage.cpp), parameter layout, communication.
#pragma once
#include <cstdint>

namespace fabtrain::kernels {

// out(n, o) = in(n, i) . w(o, i)^T (+ bias(o) when bias is not null).
void linear_forward(float* out, const float* in, const float* w, const float* bias, int n,
                    int in_dim, int out_dim);
// din(n, i) = dout(n, o) . w(o, i) (set); dw(o, i) += dout^T . in; dbias(o) += column sums of
// dout when dbias is not null.
void linear_backward(float* din, float* dw, float* dbias, const float* dout, const float* in,
                     const float* w, int n, int in_dim, int out_dim);
// dbias(o) += sum over rows of d(n, o).
void add_column_sums(float* dbias, const float* d, int n, int cols);

// out = (x - mean) * rstd * w + b per row of c; saves mean and rstd (n each). eps 1e-5.
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int n, int c);
// dx += LayerNorm backward of dout; dw, db += their gradients.
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int n, int c);

// GELU, tanh approximation.
void gelu_forward(float* out, const float* x, std::int64_t count);
// dx = gelu'(x) * dout (set).
void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t count);

// Causal attention over nh heads of hd channels. qkv: (b*t, 3*nh*hd) with sections q | k | v,
// head h at offset h*hd of each section. att: (b, nh, t, t) softmax probabilities (upper
// triangle zero). y: (b*t, nh*hd). Scale 1/sqrt(hd).
void attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh, int hd);
// One query of one head over positions 0..last: row[j] = softmax_j(q . k_j / sqrt(hd)) (last+1
// floats) and y = sum_j row[j] v_j, key and value j at k + j*stride, v + j*stride. The body of
// attention_forward, shared with the inference path's key-value cache (exec/model/gpt2_infer.cpp).
void attention_row(float* y, float* row, const float* q, const float* k, const float* v,
                   std::int64_t stride, int last, int hd);
// dqkv (set) from dy, att and qkv.
void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv, int b,
                        int t, int nh, int hd);

// Cross-entropy with the softmax over the first v of vp columns of logits (n, vp). Writes the
// log-sum-exp of each row and its loss (lse minus the target's logit); the caller sums the rows
// in order, in double, so the mean has the same bits on every run and backend.
void crossentropy_forward(float* lse, float* row_loss, const float* logits, const int* targets,
                          int n, int v, int vp);
// Replaces logits by d(mean loss)/d(logits): (softmax - onehot) / n in the first v columns, 0 in
// the padding columns.
void crossentropy_backward(float* logits_to_dlogits, const float* lse, const int* targets, int n,
                           int v, int vp);

// out(i, :) = wte(tokens[i], :) + wpe(i % t, :) for the n = b*t rows.
void embedding_forward(float* out, const int* tokens, const float* wte, const float* wpe, int n,
                       int t, int c);
// dwte(tokens[i]) += dout(i); dwpe(i % t) += dout(i).
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int n,
                        int t, int c);

// out = a + b + bias(row-broadcast over c columns), n rows.
void residual_add(float* out, const float* a, const float* b, const float* bias, int n, int c);

}  // namespace fabtrain::kernels
