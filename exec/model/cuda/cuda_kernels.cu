// The CUDA kernels of GPT-2 (see cuda_kernels.hpp). Row-wise operations give one warp (or, for
// the long vocabulary rows of the cross-entropy, one block) to a row; elementwise ones use
// grid-stride loops. Formulas follow exec/model/kernels.cpp term by term so results agree with the
// CPU reference to fp32 round-off.
#include <cmath>

#include "exec/model/cuda/cuda_kernels.hpp"
#include "exec/model/half_rounding.hpp"

namespace fabtrain::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

unsigned blocks_for(std::int64_t count) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  return unsigned(blocks < 65535 * 16 ? (blocks < 1 ? 1 : blocks) : 65535 * 16);
}
unsigned warp_blocks_for(std::int64_t rows) {
  return unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
// Sum (or max) over a block of kThreads threads; every thread gets the result.
__device__ float block_reduce(float v, bool take_max) {
  __shared__ float lanes[kWarpsPerBlock];
  __shared__ float result;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = take_max ? warp_max(v) : warp_sum(v);
  if (lane == 0) lanes[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < kWarpsPerBlock ? lanes[lane] : (take_max ? -INFINITY : 0.0f);
    w = take_max ? warp_max(w) : warp_sum(w);
    if (lane == 0) result = w;
  }
  __syncthreads();
  return result;
}

__global__ void column_partial_kernel(float* partial, const float* src, int n, int cols) {
  __shared__ float sums[8][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int row0 = blockIdx.y * kColumnSumRows;
  const int row1 = min(n, row0 + kColumnSumRows);
  float s = 0.0f;
  if (col < cols)
    for (int r = row0 + threadIdx.y; r < row1; r += 8) s += src[std::int64_t(r) * cols + col];
  sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int k = 0; k < 8; ++k) total += sums[k][threadIdx.x];
    partial[std::int64_t(blockIdx.y) * cols + col] = total;
  }
}

__global__ void column_finish_kernel(float* dst, const float* partial, int chunks, int cols) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  float total = 0.0f;
  for (int k = 0; k < chunks; ++k) total += partial[std::int64_t(k) * cols + col];
  dst[col] += total;
}

__global__ void add_bias_rows_kernel(float* out, const float* bias, std::int64_t count, int c) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] += bias[i % c];
}

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* x,
                                         const float* w, const float* b, int n, int c) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= n) return;
  const float* xi = x + std::int64_t(row) * c;
  float* oi = out + std::int64_t(row) * c;
  float sum = 0.0f;
  for (int j = lane; j < c; j += 32) sum += xi[j];
  const float m = warp_sum(sum) / c;
  float var = 0.0f;
  for (int j = lane; j < c; j += 32) var += (xi[j] - m) * (xi[j] - m);
  var = warp_sum(var) / c;
  const float s = 1.0f / sqrtf(var + 1e-5f);
  for (int j = lane; j < c; j += 32) oi[j] = (xi[j] - m) * s * w[j] + b[j];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// dx += ...; norm * dout goes to dw_rows (n, c) for the column sums of dw.
__global__ void layernorm_backward_kernel(float* dx, float* dw_rows, const float* dout,
                                          const float* x, const float* w, const float* mean,
                                          const float* rstd, int n, int c) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= n) return;
  const std::int64_t o = std::int64_t(row) * c;
  const float m = mean[row], s = rstd[row];
  float mean_dnorm = 0.0f, mean_dnorm_norm = 0.0f;
  for (int j = lane; j < c; j += 32) {
    const float norm = (x[o + j] - m) * s;
    const float dnorm = dout[o + j] * w[j];
    mean_dnorm += dnorm;
    mean_dnorm_norm += dnorm * norm;
  }
  mean_dnorm = warp_sum(mean_dnorm) / c;
  mean_dnorm_norm = warp_sum(mean_dnorm_norm) / c;
  for (int j = lane; j < c; j += 32) {
    const float norm = (x[o + j] - m) * s;
    const float dnorm = dout[o + j] * w[j];
    dw_rows[o + j] = norm * dout[o + j];
    dx[o + j] += s * (dnorm - mean_dnorm - norm * mean_dnorm_norm);
  }
}

__global__ void gelu_forward_kernel(float* out, const float* x, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    out[i] = 0.5f * v * (1.0f + tanhf(kGeluK * (v + kGeluA * v * v * v)));
  }
}

__global__ void gelu_backward_kernel(float* dx, const float* x, const float* dout,
                                     std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    const float th = tanhf(kGeluK * (v + kGeluA * v * v * v));
    const float dth = (1.0f - th * th) * kGeluK * (1.0f + 3.0f * kGeluA * v * v);
    dx[i] = (0.5f * (1.0f + th) + 0.5f * v * dth) * dout[i];
  }
}

__global__ void causal_softmax_forward_kernel(float* att, std::int64_t rows, int t) {
  const std::int64_t row = blockIdx.x * std::int64_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int i = int(row % t);
  float* p = att + row * t;
  float maxv = -INFINITY;
  for (int j = lane; j <= i; j += 32) maxv = fmaxf(maxv, p[j]);
  maxv = warp_max(maxv);
  float sum = 0.0f;
  for (int j = lane; j <= i; j += 32) {
    const float e = expf(p[j] - maxv);
    p[j] = e;
    sum += e;
  }
  const float inv = 1.0f / warp_sum(sum);
  for (int j = lane; j < t; j += 32) p[j] = j <= i ? p[j] * inv : 0.0f;
}

__global__ void causal_softmax_backward_kernel(float* datt, const float* att, std::int64_t rows,
                                               int t, float scale) {
  const std::int64_t row = blockIdx.x * std::int64_t(kWarpsPerBlock) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int i = int(row % t);
  float* d = datt + row * t;
  const float* a = att + row * t;
  float weighted = 0.0f;
  for (int j = lane; j <= i; j += 32) weighted += a[j] * d[j];
  weighted = warp_sum(weighted);
  for (int j = lane; j < t; j += 32) d[j] = j <= i ? a[j] * (d[j] - weighted) * scale : 0.0f;
}

__global__ void crossentropy_forward_kernel(float* lse, float* row_loss, const float* logits,
                                            const int* targets, int v, int vp) {
  const int row = blockIdx.x;
  const float* p = logits + std::int64_t(row) * vp;
  float maxv = -INFINITY;
  for (int j = threadIdx.x; j < v; j += blockDim.x) maxv = fmaxf(maxv, p[j]);
  maxv = block_reduce(maxv, true);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < v; j += blockDim.x) sum += expf(p[j] - maxv);
  sum = block_reduce(sum, false);
  if (threadIdx.x == 0) {
    const float l = maxv + logf(sum);
    lse[row] = l;
    row_loss[row] = l - p[targets[row]];
  }
}

__global__ void crossentropy_backward_kernel(float* logits, const float* lse, const int* targets,
                                             int n, int v, int vp) {
  const int row = blockIdx.x;
  float* p = logits + std::int64_t(row) * vp;
  const float l = lse[row], inv_n = 1.0f / n;
  for (int j = threadIdx.x; j < vp; j += blockDim.x) p[j] = j < v ? expf(p[j] - l) * inv_n : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) p[targets[row]] -= inv_n;
}

__global__ void embedding_forward_kernel(float* out, const int* tokens, const float* wte,
                                         const float* wpe, std::int64_t count, int t, int c) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / c;
    const int j = int(i % c);
    out[i] = wte[std::int64_t(tokens[row]) * c + j] + wpe[std::int64_t(row % t) * c + j];
  }
}

__global__ void embedding_backward_wte_kernel(float* dwte, const float* dout,
                                              const int* rows_by_token, const int* group_start,
                                              const int* group_token, int c) {
  const int g = blockIdx.x;
  const int j = blockIdx.y * blockDim.x + threadIdx.x;
  if (j >= c) return;
  float* e = dwte + std::int64_t(group_token[g]) * c + j;
  float acc = *e;
  for (int k = group_start[g]; k < group_start[g + 1]; ++k)
    acc += dout[std::int64_t(rows_by_token[k]) * c + j];
  *e = acc;
}

__global__ void embedding_backward_wpe_kernel(float* dwpe, const float* dout, int n, int t, int c) {
  const int pos = blockIdx.x;
  const int j = blockIdx.y * blockDim.x + threadIdx.x;
  if (j >= c) return;
  float* p = dwpe + std::int64_t(pos) * c + j;
  float acc = *p;
  for (int row = pos; row < n; row += t) acc += dout[std::int64_t(row) * c + j];
  *p = acc;
}

__global__ void residual_add_kernel(float* out, const float* a, const float* b, const float* bias,
                                    std::int64_t count, int c) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i] + bias[i % c];
}

__global__ void adamw_kernel(float* p, const float* g, float* pm, float* pv,
                             const unsigned char* mask, std::int64_t count, float beta1,
                             float beta2, float eps, float step_size, float inv_sqrt_c2,
                             float lr_decay) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = beta1 * pm[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * pv[i] + (1.0f - beta2) * gi * gi;
    pm[i] = mi;
    pv[i] = vi;
    const float decay = (!mask || mask[i]) ? lr_decay : 0.0f;
    p[i] -= step_size * mi / (sqrtf(vi) * inv_sqrt_c2 + eps) + decay * p[i];
  }
}

__global__ void scale_kernel(float* data, std::int64_t count, float factor) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    data[i] *= factor;
}

__global__ void add_into_kernel(float* dst, const float* src, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

// Block b sums the squares of chunk b (kSquareSumChunk elements): each thread a fixed stride of
// it, then a fixed tree over the threads.
__global__ void square_partial_kernel(double* partial, const float* data, const float* mask,
                                      std::int64_t count) {
  __shared__ double sums[kThreads];
  const std::int64_t begin = std::int64_t(blockIdx.x) * kSquareSumChunk;
  const std::int64_t end = begin + kSquareSumChunk < count ? begin + kSquareSumChunk : count;
  double sum = 0;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += kThreads)
    if (mask[i] != 0.0f) sum += double(data[i]) * double(data[i]);
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

__global__ void sum_in_order_kernel(double* result, const double* partial, std::int64_t chunks) {
  double sum = 0;
  for (std::int64_t k = 0; k < chunks; ++k) sum += partial[k];
  *result = sum;
}

__global__ void adamw_scaled_kernel(float* p, const float* g, float* pm, float* pv,
                                    const float* decay_mask, std::int64_t count, float beta1,
                                    float beta2, float eps, float step_size, float inv_sqrt_c2,
                                    float lr_decay, float grad_scale) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float gi = grad_scale != 1.0f ? g[i] * grad_scale : g[i];
    const float mi = beta1 * pm[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * pv[i] + (1.0f - beta2) * gi * gi;
    pm[i] = mi;
    pv[i] = vi;
    const float decay = decay_mask[i] != 0.0f ? lr_decay : 0.0f;
    p[i] -= step_size * mi / (sqrtf(vi) * inv_sqrt_c2 + eps) + decay * p[i];
  }
}

__global__ void round_to_16bit_kernel(std::uint16_t* dst, const float* src, std::int64_t count,
                                      bool bf16) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = bf16 ? half::bf16_bits(src[i]) : half::fp16_bits(src[i]);
}

}  // namespace

void round_to_16bit(std::uint16_t* dst, const float* src, std::int64_t count, bool bf16,
                    cudaStream_t stream) {
  round_to_16bit_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dst, src, count, bf16);
}

void scale(float* data, std::int64_t count, float factor, cudaStream_t stream) {
  scale_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, factor);
}

void add_into(float* dst, const float* src, std::int64_t count, cudaStream_t stream) {
  add_into_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dst, src, count);
}

double* masked_square_sum(const float* data, const float* mask, std::int64_t count, double* scratch,
                          cudaStream_t stream) {
  const std::int64_t chunks = masked_square_sum_scratch(count) - 1;
  if (chunks > 0)
    square_partial_kernel<<<unsigned(chunks), kThreads, 0, stream>>>(scratch, data, mask, count);
  sum_in_order_kernel<<<1, 1, 0, stream>>>(scratch + chunks, scratch, chunks);
  return scratch + chunks;
}

void adamw_update_scaled(float* params, const float* grads, float* m, float* v, const float* decay,
                         std::int64_t count, float lr, float beta1, float beta2, float eps,
                         float weight_decay, int step, float grad_scale, cudaStream_t stream) {
  const float c1 = 1.0f - std::pow(beta1, float(step));
  const float c2 = 1.0f - std::pow(beta2, float(step));
  adamw_scaled_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
      params, grads, m, v, decay, count, beta1, beta2, eps, lr / c1, 1.0f / std::sqrt(c2),
      lr * weight_decay, grad_scale);
}

void column_sums_add(float* dst, const float* src, int n, int cols, float* scratch,
                     cudaStream_t stream) {
  const int chunks = (n + kColumnSumRows - 1) / kColumnSumRows;
  column_partial_kernel<<<dim3((cols + 31) / 32, chunks), dim3(32, 8), 0, stream>>>(scratch, src, n,
                                                                                    cols);
  column_finish_kernel<<<(cols + kThreads - 1) / kThreads, kThreads, 0, stream>>>(dst, scratch,
                                                                                  chunks, cols);
}

void add_bias_rows(float* out, const float* bias, int n, int c, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * c;
  add_bias_rows_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out, bias, count, c);
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int n, int c, cudaStream_t stream) {
  layernorm_forward_kernel<<<warp_blocks_for(n), kThreads, 0, stream>>>(out, mean, rstd, x, w, b, n,
                                                                        c);
}

void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int n, int c,
                        float* scratch, cudaStream_t stream) {
  float* dw_rows = scratch;
  float* partial = scratch + std::int64_t(n) * c;
  layernorm_backward_kernel<<<warp_blocks_for(n), kThreads, 0, stream>>>(dx, dw_rows, dout, x, w,
                                                                         mean, rstd, n, c);
  column_sums_add(dw, dw_rows, n, c, partial, stream);
  column_sums_add(db, dout, n, c, partial, stream);
}

void gelu_forward(float* out, const float* x, std::int64_t count, cudaStream_t stream) {
  gelu_forward_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out, x, count);
}

void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t count,
                   cudaStream_t stream) {
  gelu_backward_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dx, x, dout, count);
}

void causal_softmax_forward(float* att, std::int64_t rows, int t, cudaStream_t stream) {
  causal_softmax_forward_kernel<<<warp_blocks_for(rows), kThreads, 0, stream>>>(att, rows, t);
}

void causal_softmax_backward(float* datt, const float* att, std::int64_t rows, int t, float scale,
                             cudaStream_t stream) {
  causal_softmax_backward_kernel<<<warp_blocks_for(rows), kThreads, 0, stream>>>(datt, att, rows, t,
                                                                                 scale);
}

void crossentropy_forward(float* lse, float* row_loss, const float* logits, const int* targets,
                          int n, int v, int vp, cudaStream_t stream) {
  crossentropy_forward_kernel<<<n, kThreads, 0, stream>>>(lse, row_loss, logits, targets, v, vp);
}

void crossentropy_backward(float* logits, const float* lse, const int* targets, int n, int v,
                           int vp, cudaStream_t stream) {
  crossentropy_backward_kernel<<<n, kThreads, 0, stream>>>(logits, lse, targets, n, v, vp);
}

void embedding_forward(float* out, const int* tokens, const float* wte, const float* wpe, int n,
                       int t, int c, cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * c;
  embedding_forward_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out, tokens, wte, wpe, count,
                                                                       t, c);
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int* rows_by_token,
                        const int* group_start, const int* group_token, int groups, int n, int t,
                        int c, cudaStream_t stream) {
  const unsigned column_blocks = unsigned((c + kThreads - 1) / kThreads);
  if (groups > 0)
    embedding_backward_wte_kernel<<<dim3(groups, column_blocks), kThreads, 0, stream>>>(
        dwte, dout, rows_by_token, group_start, group_token, c);
  embedding_backward_wpe_kernel<<<dim3(t, column_blocks), kThreads, 0, stream>>>(dwpe, dout, n, t,
                                                                                 c);
}

void residual_add(float* out, const float* a, const float* b, const float* bias, int n, int c,
                  cudaStream_t stream) {
  const std::int64_t count = std::int64_t(n) * c;
  residual_add_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out, a, b, bias, count, c);
}

void adamw_update(float* params, const float* grads, float* m, float* v,
                  const unsigned char* decay_mask, std::int64_t count, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int step, cudaStream_t stream) {
  // The same scalar folding as exec/model/adamw.cpp, computed on the host in fp32.
  const float c1 = 1.0f - std::pow(beta1, float(step));
  const float c2 = 1.0f - std::pow(beta2, float(step));
  adamw_kernel<<<blocks_for(count), kThreads, 0, stream>>>(params, grads, m, v, decay_mask, count,
                                                           beta1, beta2, eps, lr / c1,
                                                           1.0f / std::sqrt(c2), lr * weight_decay);
}

}  // namespace fabtrain::cuda
