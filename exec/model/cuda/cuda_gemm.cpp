// cuBLAS matrix products in row-major terms (see cuda_gemm.hpp).
#include "exec/model/cuda/cuda_gemm.hpp"

#include <cmath>
#include <cstdint>

#include "exec/cuda/cuda_check.hpp"
#include "exec/model/cuda/cuda_kernels.hpp"

namespace fabtrain::cuda {

CudaGemm::CudaGemm(cudaStream_t stream, MatmulPrecision precision)
    : stream_(stream), precision_(precision) {
  CUBLAS_CHECK(cublasCreate(&handle_));
  CUBLAS_CHECK(cublasSetStream(handle_, stream_));
  // Plain fp32 unless asked: the comparison with the CPU reference is at fp32 round-off.
  CUBLAS_CHECK(cublasSetMathMode(handle_, precision_ == MatmulPrecision::tf32
                                              ? CUBLAS_TF32_TENSOR_OP_MATH
                                              : CUBLAS_DEFAULT_MATH));
}

CudaGemm::~CudaGemm() {
  if (handle_) cublasDestroy(handle_);
}

void CudaGemm::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, long long stride_a, const float* b, int ldb, long long stride_b,
                    float beta, float* c, int ldc, long long stride_c, int batch) {
  // Row-major C = op(A) op(B)  <=>  column-major C^T = op(B)^T op(A)^T: swap the operands.
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (precision_ == MatmulPrecision::bf16 || precision_ == MatmulPrecision::fp16) {
    gemm_16bit(op_a, op_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
               stride_c, batch);
    return;
  }
  if (batch == 1)
    CUBLAS_CHECK(cublasSgemm(handle_, op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
  else
    CUBLAS_CHECK(cublasSgemmStridedBatched(handle_, op_b, op_a, n, m, k, &alpha, b, ldb, stride_b,
                                           a, lda, stride_a, &beta, c, ldc, stride_c, batch));
}

void CudaGemm::gemm_16bit(cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
                          float alpha, const float* a, int lda, long long stride_a, const float* b,
                          int ldb, long long stride_b, float beta, float* c, int ldc,
                          long long stride_c, int batch) {
  const bool bf16 = precision_ == MatmulPrecision::bf16;
  const cudaDataType_t type = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const std::int64_t span_a = operand_span(op_a == CUBLAS_OP_T, m, k, lda, stride_a, batch);
  const std::int64_t span_b = operand_span(op_b == CUBLAS_OP_T, k, n, ldb, stride_b, batch);
  std::uint16_t* a16 = half_a_.grown(span_a);
  std::uint16_t* b16 = half_b_.grown(span_b);
  round_to_16bit(a16, a, span_a, bf16, stream_);
  round_to_16bit(b16, b, span_b, bf16, stream_);
  CUDA_CHECK(cudaGetLastError());
  // fp32 accumulation and an fp32 result (beta accumulates into the fp32 gradients).
  if (batch == 1)
    CUBLAS_CHECK(cublasGemmEx(handle_, op_b, op_a, n, m, k, &alpha, b16, type, ldb, a16, type, lda,
                              &beta, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  else
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle_, op_b, op_a, n, m, k, &alpha, b16, type, ldb, stride_b, a16, type, lda, stride_a,
        &beta, c, CUDA_R_32F, ldc, stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void CudaGemm::linear_forward(float* out, const float* in, const float* w, const float* bias, int n,
                              int in_dim, int out_dim) {
  gemm(false, true, n, out_dim, in_dim, 1.0f, in, in_dim, 0, w, in_dim, 0, 0.0f, out, out_dim, 0);
  if (bias) {
    add_bias_rows(out, bias, n, out_dim, stream_);
    CUDA_CHECK(cudaGetLastError());
  }
}

void CudaGemm::linear_backward(float* din, float* dw, float* dbias, const float* dout,
                               const float* in, const float* w, int n, int in_dim, int out_dim,
                               float* scratch) {
  if (din)
    gemm(false, false, n, in_dim, out_dim, 1.0f, dout, out_dim, 0, w, in_dim, 0, 0.0f, din, in_dim,
         0);
  gemm(true, false, out_dim, in_dim, n, 1.0f, dout, out_dim, 0, in, in_dim, 0, 1.0f, dw, in_dim, 0);
  if (dbias) {
    column_sums_add(dbias, dout, n, out_dim, scratch, stream_);
    CUDA_CHECK(cudaGetLastError());
  }
}

void CudaGemm::attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh,
                                 int hd) {
  const int c = nh * hd, c3 = 3 * c;
  const float scale = 1.0f / std::sqrt(float(hd));
  const long long tt = (long long)t * t;
  for (int bi = 0; bi < b; ++bi) {
    const float* q = qkv + std::int64_t(bi) * t * c3;
    const float* k = q + c;
    float* att_b = att + std::int64_t(bi) * nh * tt;
    // scores(h) = Q_h K_h^T * scale, heads hd columns apart in the qkv rows.
    gemm(false, true, t, t, hd, scale, q, c3, hd, k, c3, hd, 0.0f, att_b, t, tt, nh);
  }
  causal_softmax_forward(att, std::int64_t(b) * nh * t, t, stream_);
  CUDA_CHECK(cudaGetLastError());
  for (int bi = 0; bi < b; ++bi) {
    const float* v = qkv + std::int64_t(bi) * t * c3 + 2 * c;
    const float* att_b = att + std::int64_t(bi) * nh * tt;
    gemm(false, false, t, hd, t, 1.0f, att_b, t, tt, v, c3, hd, 0.0f, y + std::int64_t(bi) * t * c,
         c, hd, nh);
  }
}

void CudaGemm::attention_backward(float* dqkv, float* datt, const float* dy, const float* att,
                                  const float* qkv, int b, int t, int nh, int hd) {
  const int c = nh * hd, c3 = 3 * c;
  const float scale = 1.0f / std::sqrt(float(hd));
  const long long tt = (long long)t * t;
  for (int bi = 0; bi < b; ++bi) {
    const float* q = qkv + std::int64_t(bi) * t * c3;
    const float* v = q + 2 * c;
    const float* dy_b = dy + std::int64_t(bi) * t * c;
    const float* att_b = att + std::int64_t(bi) * nh * tt;
    float* dv = dqkv + std::int64_t(bi) * t * c3 + 2 * c;
    // datt = dY V^T; dV = att^T dY (set).
    gemm(false, true, t, t, hd, 1.0f, dy_b, c, hd, v, c3, hd, 0.0f,
         datt + std::int64_t(bi) * nh * tt, t, tt, nh);
    gemm(true, false, t, hd, t, 1.0f, att_b, t, tt, dy_b, c, hd, 0.0f, dv, c3, hd, nh);
  }
  causal_softmax_backward(datt, att, std::int64_t(b) * nh * t, t, scale, stream_);
  CUDA_CHECK(cudaGetLastError());
  for (int bi = 0; bi < b; ++bi) {
    const float* q = qkv + std::int64_t(bi) * t * c3;
    const float* k = q + c;
    const float* dpre = datt + std::int64_t(bi) * nh * tt;
    float* dq = dqkv + std::int64_t(bi) * t * c3;
    float* dk = dq + c;
    // dQ = dpre K; dK = dpre^T Q (set; dpre is zero above the diagonal).
    gemm(false, false, t, hd, t, 1.0f, dpre, t, tt, k, c3, hd, 0.0f, dq, c3, hd, nh);
    gemm(true, false, t, hd, t, 1.0f, dpre, t, tt, q, c3, hd, 0.0f, dk, c3, hd, nh);
  }
}

}  // namespace fabtrain::cuda
