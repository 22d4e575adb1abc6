// Matrix products of GPT-2 on cuBLAS, stated in the row-major terms of the CPU kernels
// (exec/model/kernels.hpp): linear layers with llm.c's (out, in) weights, and the attention's
// per-head products read straight out of the (b*t, 3*C) qkv rows through leading dimensions (no
// permute). cuBLAS is column-major: a row-major product C = A.B is computed as C^T = B^T.A^T. fp32
// by default; TF32 tensor-core math when the handle is set to it (CudaGemm::set_tf32). Not here:
// the elementwise kernels (cuda_kernels.hpp).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace fabtrain::cuda {

class CudaGemm {
 public:
  explicit CudaGemm(cudaStream_t stream);
  ~CudaGemm();
  CudaGemm(const CudaGemm&) = delete;
  CudaGemm& operator=(const CudaGemm&) = delete;
  void set_tf32(bool on);
  bool tf32() const { return tf32_; }

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
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_;
  bool tf32_ = false;
};

}  // namespace fabtrain::cuda
