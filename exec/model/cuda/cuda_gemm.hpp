// Matrix products of GPT-2 on cuBLAS, stated in the row-major terms of the CPU kernels
// (exec/model/kernels.hpp): linear layers with llm.c's (out, in) weights, and the attention's
// per-head products read straight out of the (b*t, 3*C) qkv rows through leading dimensions (no
// permute). cuBLAS is column-major: a row-major product C = A.B is computed as C^T = B^T.A^T.
// Precision (MatmulPrecision): fp32 by default; TF32 tensor-core math; or bf16/fp16 tensor-core
// products with fp32 accumulation and fp32 results: the fp32 operands (master weights,
// activations, gradients) are rounded to 16 bits into scratch kept between products
// (round_to_16bit), the product reads those. Not here: the elementwise kernels
// (cuda_kernels.hpp), loss scaling (the interpreter's, exec/play/loss_scale.hpp).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cuda/cuda_device.hpp"
#include "exec/model/half_operands.hpp"

namespace fabtrain::cuda {

enum class MatmulPrecision { fp32, tf32, bf16, fp16 };

class CudaGemm {
 public:
  CudaGemm(cudaStream_t stream, MatmulPrecision precision);
  ~CudaGemm();
  CudaGemm(const CudaGemm&) = delete;
  CudaGemm& operator=(const CudaGemm&) = delete;
  MatmulPrecision precision() const { return precision_; }
  // The 16-bit operand scratch held so far, in elements of each operand's array
  // (exec/model/half_operands.hpp sizes it ahead).
  OperandSpans half_operands() const { return {half_a_.size(), half_b_.size()}; }

  // out(n, o) = in(n, i) . w(o, i)^T (+ bias(o) when bias is not null).
  void linear_forward(float* out, const float* in, const float* w, const float* bias, int n,
                      int in_dim, int out_dim);
  // din(n, i) = dout . w (set, skipped when din is null); dw(o, i) += dout^T . in; dbias(o) +=
  // column sums of dout (scratch: column_sums_scratch(n, out_dim) floats).
  void linear_backward(float* din, float* dw, float* dbias, const float* dout, const float* in,
                       const float* w, int n, int in_dim, int out_dim, float* scratch);
  // Causal attention as kernels::attention_forward: att (b, nh, t, t), y (b*t, nh*hd).
  void attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh, int hd);
  // dqkv (set) from dy, att and qkv; datt is scratch of b*nh*t*t floats.
  void attention_backward(float* dqkv, float* datt, const float* dy, const float* att,
                          const float* qkv, int b, int t, int nh, int hd);

  // Row-major C(m, n) = alpha * op(A) . op(B) + beta * C, batched with strides (elements).
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            long long stride_a, const float* b, int ldb, long long stride_b, float beta, float* c,
            int ldc, long long stride_c, int batch = 1);

 private:
  // gemm() with the operands rounded to bf16 or fp16 first.
  void gemm_16bit(cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, float alpha,
                  const float* a, int lda, long long stride_a, const float* b, int ldb,
                  long long stride_b, float beta, float* c, int ldc, long long stride_c, int batch);

  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_;
  MatmulPrecision precision_;
  DeviceArray<std::uint16_t> half_a_, half_b_;  // the 16-bit operands, grow-only
};

}  // namespace fabtrain::cuda
