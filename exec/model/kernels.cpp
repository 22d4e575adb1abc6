// The CPU kernels of GPT-2 (see kernels.hpp): sgemm for the matrix products, OpenMP loops for
// the rest. Reductions over rows (bias and LayerNorm weight gradients) use per-thread partial
// sums added in thread order, so a rerun with the same thread count gives the same bits.
// The element-wise loops are compiled for AVX-512 and AVX2 besides the baseline (target_clones,
// picked when the program loads: the build itself targets any x86-64), and GELU's tanh and the
// softmax's exp are computed by exp_nonpositive() below rather than libm, whose scalar calls
// stop the loops from vectorising (they took 8% of a GPT-2 small step).
#include "exec/model/kernels.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "exec/model/kernels_vector.hpp"

namespace fabtrain::kernels {

void linear_forward(float* out, const float* in, const float* w, const float* bias, int n,
                    int in_dim, int out_dim) {
  float beta = 0.0f;
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) std::copy(bias, bias + out_dim, out + std::int64_t(i) * out_dim);
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out_dim, in_dim, 1.0f, in, in_dim, w,
              in_dim, beta, out, out_dim);
}

void linear_backward(float* din, float* dw, float* dbias, const float* dout, const float* in,
                     const float* w, int n, int in_dim, int out_dim) {
  if (din)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in_dim, out_dim, 1.0f, dout, out_dim,
                w, in_dim, 0.0f, din, in_dim);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_dim, in_dim, n, 1.0f, dout, out_dim, in,
              in_dim, 1.0f, dw, in_dim);
  if (dbias) add_column_sums(dbias, dout, n, out_dim);
}

void add_column_sums(float* dbias, const float* d, int n, int cols) {
  constexpr int chunk = 64;  // columns per task: contiguous inner loop, rows outer
  const int chunks = (cols + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < chunks; ++k) {
    const int c0 = k * chunk, c1 = std::min(cols, c0 + chunk);
    float sum[chunk] = {};
    for (int i = 0; i < n; ++i) {
      const float* row = d + std::int64_t(i) * cols;
#pragma omp simd
      for (int c = c0; c < c1; ++c) sum[c - c0] += row[c];
    }
    for (int c = c0; c < c1; ++c) dbias[c] += sum[c - c0];
  }
}

namespace {

FABTRAIN_VECTOR_CLONES
void layernorm_forward_rows(float* out, float* mean, float* rstd, const float* x, const float* w,
                            const float* b, int begin, int end, int c) {
  constexpr float eps = 1e-5f;
  for (int i = begin; i < end; ++i) {
    const float* xi = x + std::int64_t(i) * c;
    float* oi = out + std::int64_t(i) * c;
    float m = 0.0f;
#pragma omp simd reduction(+ : m)
    for (int j = 0; j < c; ++j) m += xi[j];
    m /= c;
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (int j = 0; j < c; ++j) var += (xi[j] - m) * (xi[j] - m);
    var /= c;
    const float s = 1.0f / std::sqrt(var + eps);
#pragma omp simd
    for (int j = 0; j < c; ++j) oi[j] = (xi[j] - m) * s * w[j] + b[j];
    mean[i] = m;
    rstd[i] = s;
  }
}

// Rows [begin, end): dx += ..., and this thread's partial sums of dw and db.
FABTRAIN_VECTOR_CLONES
void layernorm_backward_rows(float* dx, float* dw_local, float* db_local, const float* dout,
                             const float* x, const float* w, const float* mean, const float* rstd,
                             int begin, int end, int c) {
  for (int i = begin; i < end; ++i) {
    const float* xi = x + std::int64_t(i) * c;
    const float* gi = dout + std::int64_t(i) * c;
    float* dxi = dx + std::int64_t(i) * c;
    const float m = mean[i], s = rstd[i];
    float mean_dnorm = 0.0f, mean_dnorm_norm = 0.0f;
#pragma omp simd reduction(+ : mean_dnorm, mean_dnorm_norm)
    for (int j = 0; j < c; ++j) {
      const float norm = (xi[j] - m) * s;
      const float dnorm = gi[j] * w[j];
      mean_dnorm += dnorm;
      mean_dnorm_norm += dnorm * norm;
    }
    mean_dnorm /= c;
    mean_dnorm_norm /= c;
#pragma omp simd
    for (int j = 0; j < c; ++j) {
      const float norm = (xi[j] - m) * s;
      const float dnorm = gi[j] * w[j];
      db_local[j] += gi[j];
      dw_local[j] += norm * gi[j];
      dxi[j] += s * (dnorm - mean_dnorm - norm * mean_dnorm_norm);
    }
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int n, int c) {
  for_thread_ranges(n, [&](std::int64_t begin, std::int64_t end) {
    layernorm_forward_rows(out, mean, rstd, x, w, b, int(begin), int(end), c);
  });
}

void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int n, int c) {
  // Per-thread partial sums of dw and db, added in thread order so results are reproducible.
  const int threads = omp_get_max_threads();
  std::vector<float> partial(std::size_t(threads) * 2 * c, 0.0f);
#pragma omp parallel num_threads(threads)
  {
    const int me = omp_get_thread_num(), used = omp_get_num_threads();
    const int begin = int(std::int64_t(n) * me / used),
              end = int(std::int64_t(n) * (me + 1) / used);
    float* dw_local = partial.data() + std::size_t(me) * 2 * c;
    layernorm_backward_rows(dx, dw_local, dw_local + c, dout, x, w, mean, rstd, begin, end, c);
  }
  for (int k = 0; k < threads; ++k)
    for (int j = 0; j < c; ++j) {
      dw[j] += partial[std::size_t(k) * 2 * c + j];
      db[j] += partial[std::size_t(k) * 2 * c + c + j];
    }
}

namespace {
constexpr float gelu_k = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float gelu_a = 0.044715f;
}  // namespace

namespace {

// tanh(u) = sign(u) (1 - e) / (1 + e) with e = exp(-2|u|) <= 1: no overflow, vectorisable.
[[gnu::always_inline]] inline float tanh_vec(float u) {
  const float e = exp_nonpositive(-2.0f * std::abs(u));
  return std::copysign((1.0f - e) / (1.0f + e), u);
}

FABTRAIN_VECTOR_CLONES
void gelu_forward_range(float* out, const float* x, std::int64_t begin, std::int64_t end) {
#pragma omp simd
  for (std::int64_t i = begin; i < end; ++i) {
    const float v = x[i];
    out[i] = 0.5f * v * (1.0f + tanh_vec(gelu_k * (v + gelu_a * v * v * v)));
  }
}

FABTRAIN_VECTOR_CLONES
void gelu_backward_range(float* dx, const float* x, const float* dout, std::int64_t begin,
                         std::int64_t end) {
#pragma omp simd
  for (std::int64_t i = begin; i < end; ++i) {
    const float v = x[i];
    const float th = tanh_vec(gelu_k * (v + gelu_a * v * v * v));
    const float dth = (1.0f - th * th) * gelu_k * (1.0f + 3.0f * gelu_a * v * v);
    dx[i] = (0.5f * (1.0f + th) + 0.5f * v * dth) * dout[i];
  }
}

}  // namespace

void gelu_forward(float* out, const float* x, std::int64_t count) {
  for_thread_ranges(
      count, [&](std::int64_t begin, std::int64_t end) { gelu_forward_range(out, x, begin, end); });
}

void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t count) {
  for_thread_ranges(count, [&](std::int64_t begin, std::int64_t end) {
    gelu_backward_range(dx, x, dout, begin, end);
  });
}

void attention_row(float* y, float* row, const float* q, const float* k, const float* v,
                   std::int64_t stride, int last, int hd) {
  const float scale = 1.0f / std::sqrt(float(hd));
  float maxv = -INFINITY;
  for (int j = 0; j <= last; ++j) {
    const float* kj = k + j * stride;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int d = 0; d < hd; ++d) dot += q[d] * kj[d];
    row[j] = dot * scale;
    maxv = std::max(maxv, row[j]);
  }
  float sum = 0.0f;
  for (int j = 0; j <= last; ++j) {
    row[j] = std::exp(row[j] - maxv);
    sum += row[j];
  }
  const float inv = 1.0f / sum;
  for (int j = 0; j <= last; ++j) row[j] *= inv;
  std::fill(y, y + hd, 0.0f);
  for (int j = 0; j <= last; ++j) {
    const float* vj = v + j * stride;
    const float a = row[j];
#pragma omp simd
    for (int d = 0; d < hd; ++d) y[d] += a * vj[d];
  }
}

void attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh, int hd) {
  const int c = nh * hd, c3 = 3 * c;
#pragma omp parallel for collapse(2) schedule(static)
  for (int bi = 0; bi < b; ++bi)
    for (int h = 0; h < nh; ++h) {
      const float* base = qkv + std::int64_t(bi) * t * c3;
      float* att_bh = att + (std::int64_t(bi) * nh + h) * t * t;
      for (int i = 0; i < t; ++i) {
        float* row = att_bh + std::int64_t(i) * t;
        attention_row(y + (std::int64_t(bi) * t + i) * c + h * hd, row,
                      base + std::int64_t(i) * c3 + h * hd, base + c + h * hd,
                      base + 2 * c + h * hd, c3, i, hd);
        for (int j = i + 1; j < t; ++j) row[j] = 0.0f;
      }
    }
}

void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv, int b,
                        int t, int nh, int hd) {
  const int c = nh * hd, c3 = 3 * c;
  const float scale = 1.0f / std::sqrt(float(hd));
#pragma omp parallel
  {
    std::vector<float> datt(t), dpre(t);
#pragma omp for collapse(2) schedule(static)
    for (int bi = 0; bi < b; ++bi)
      for (int h = 0; h < nh; ++h) {
        const float* base = qkv + std::int64_t(bi) * t * c3;
        float* dbase = dqkv + std::int64_t(bi) * t * c3;
        // This (batch, head) owns its q, k and v columns of dqkv: zero them, then accumulate.
        for (int i = 0; i < t; ++i)
          for (int s = 0; s < 3; ++s)
            std::fill_n(dbase + std::int64_t(i) * c3 + s * c + h * hd, hd, 0.0f);
        const float* att_bh = att + (std::int64_t(bi) * nh + h) * t * t;
        for (int i = 0; i < t; ++i) {
          const float* row = att_bh + std::int64_t(i) * t;
          const float* dyi = dy + (std::int64_t(bi) * t + i) * c + h * hd;
          float weighted = 0.0f;  // sum_j att_ij * datt_ij
          for (int j = 0; j <= i; ++j) {
            const float* v = base + std::int64_t(j) * c3 + 2 * c + h * hd;
            float* dv = dbase + std::int64_t(j) * c3 + 2 * c + h * hd;
            const float a = row[j];
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int d = 0; d < hd; ++d) {
              dot += dyi[d] * v[d];
              dv[d] += a * dyi[d];
            }
            datt[j] = dot;
            weighted += a * dot;
          }
          const float* q = base + std::int64_t(i) * c3 + h * hd;
          float* dq = dbase + std::int64_t(i) * c3 + h * hd;
          for (int j = 0; j <= i; ++j) {
            const float g = row[j] * (datt[j] - weighted) * scale;
            const float* k = base + std::int64_t(j) * c3 + c + h * hd;
            float* dk = dbase + std::int64_t(j) * c3 + c + h * hd;
#pragma omp simd
            for (int d = 0; d < hd; ++d) {
              dq[d] += g * k[d];
              dk[d] += g * q[d];
            }
          }
        }
      }
  }
}

namespace {

FABTRAIN_VECTOR_CLONES
float row_lse(const float* row, int v) {
  float maxv = -INFINITY;
#pragma omp simd reduction(max : maxv)
  for (int j = 0; j < v; ++j) maxv = std::max(maxv, row[j]);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < v; ++j) sum += exp_nonpositive(row[j] - maxv);
  return maxv + std::log(sum);
}

FABTRAIN_VECTOR_CLONES
void row_softmax_scaled(float* row, float lse, float scale, int v) {
#pragma omp simd
  for (int j = 0; j < v; ++j) row[j] = exp_nonpositive(row[j] - lse) * scale;
}

}  // namespace

void crossentropy_forward(float* lse, float* row_loss, const float* logits, const int* targets,
                          int n, int v, int vp) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    const float* row = logits + std::int64_t(i) * vp;
    lse[i] = row_lse(row, v);
    row_loss[i] = lse[i] - row[targets[i]];
  }
}

void crossentropy_backward(float* logits_to_dlogits, const float* lse, const int* targets, int n,
                           int v, int vp) {
  const float inv_n = 1.0f / n;
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    float* row = logits_to_dlogits + std::int64_t(i) * vp;
    // lse >= every logit of the row, so the exponent is never positive.
    row_softmax_scaled(row, lse[i], inv_n, v);
    row[targets[i]] -= inv_n;
    for (int j = v; j < vp; ++j) row[j] = 0.0f;
  }
}

void embedding_forward(float* out, const int* tokens, const float* wte, const float* wpe, int n,
                       int t, int c) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    const float* e = wte + std::int64_t(tokens[i]) * c;
    const float* p = wpe + std::int64_t(i % t) * c;
    float* o = out + std::int64_t(i) * c;
#pragma omp simd
    for (int j = 0; j < c; ++j) o[j] = e[j] + p[j];
  }
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int n,
                        int t, int c) {
  // Tokens repeat, so rows of dwte collide: split the work by columns instead of rows.
  constexpr int chunk = 64;
  const int chunks = (c + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < chunks; ++k) {
    const int c0 = k * chunk, c1 = std::min(c, c0 + chunk);
    for (int i = 0; i < n; ++i) {
      const float* g = dout + std::int64_t(i) * c;
      float* e = dwte + std::int64_t(tokens[i]) * c;
      float* p = dwpe + std::int64_t(i % t) * c;
#pragma omp simd
      for (int j = c0; j < c1; ++j) {
        e[j] += g[j];
        p[j] += g[j];
      }
    }
  }
}

void residual_add(float* out, const float* a, const float* b, const float* bias, int n, int c) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    const std::int64_t o = std::int64_t(i) * c;
#pragma omp simd
    for (int j = 0; j < c; ++j) out[o + j] = a[o + j] + b[o + j] + bias[j];
  }
}

}  // namespace fabtrain::kernels
