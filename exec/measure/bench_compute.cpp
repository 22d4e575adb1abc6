// Matrix-product and memory-bandwidth measurements (see bench_compute.hpp).
#include "exec/measure/bench_compute.hpp"

#include <cblas.h>
#include <omp.h>

#include <cmath>
#include <cstdint>

#include "common/error.hpp"

namespace fabtrain::bench {

std::vector<GemmShape> gpt2_gemm_shapes(const ModelSpec& model, int rows) {
  if (rows < 1) fail("bench: B*T = {} tokens must be at least 1", rows);
  const int C = model.n_embd, Vp = model.padded_vocab();
  struct Linear {
    const char* name;
    int in, out;
  };
  const Linear linears[] = {{"qkv", C, 3 * C},
                            {"attproj", C, C},
                            {"fc", C, 4 * C},
                            {"fcproj", 4 * C, C},
                            {"lm_head", C, Vp}};
  std::vector<GemmShape> shapes;
  for (const auto& l : linears) {
    // out = in . W^T; din = dout . W; dW = dout^T . in (exec/model/kernels.cpp's three calls).
    shapes.push_back({l.name, "forward", rows, l.out, l.in});
    shapes.push_back({l.name, "backward_input", rows, l.in, l.out});
    shapes.push_back({l.name, "backward_weight", l.out, l.in, rows});
  }
  return shapes;
}

GemmResult measure_gemm(const GemmShape& s, const Repetitions& reps) {
  // Operands laid out as the pass's call expects; values only need to be finite.
  std::vector<float> a(std::size_t(s.m) * s.k, 0.5f), b(std::size_t(s.k) * s.n, 0.25f),
      c(std::size_t(s.m) * s.n, 0.0f);
  auto run = [&] {
    if (s.pass == "forward")  // A: m x k, B stored n x k (weights), C = A B^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k,
                  b.data(), s.k, 0.0f, c.data(), s.n);
    else if (s.pass == "backward_input")  // A: m x k (dout), B: k x n (weights)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k,
                  b.data(), s.n, 0.0f, c.data(), s.n);
    else  // A stored k x m (dout), B: k x n (inputs), C accumulates as the weight gradient
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.m,
                  b.data(), s.n, 1.0f, c.data(), s.n);
  };
  GemmResult r{s};
  r.seconds = median_seconds(run, reps);
  r.flops_per_s = r.seconds > 0 ? s.flops() / r.seconds : 0;
  return r;
}

std::vector<MemoryResult> measure_memory(double array_bytes, int row_width,
                                         const Repetitions& reps) {
  if (row_width < 1) fail("bench: row width {} must be at least 1", row_width);
  std::int64_t n = std::int64_t(array_bytes / sizeof(float));
  n = std::max<std::int64_t>(row_width, n / row_width * row_width);
  std::vector<float> x(n), y(n), z(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {  // first touch by the threads that will use the pages
    x[i] = float(i % 17) * 0.1f;
    y[i] = 1.0f;
    z[i] = 0.0f;
  }
  const double f = sizeof(float);
  std::vector<MemoryResult> out;
  auto record = [&](const char* kernel, double bytes, auto&& fn) {
    MemoryResult r{kernel, bytes};
    r.seconds = median_seconds(fn, reps);
    r.bytes_per_s = r.seconds > 0 ? bytes / r.seconds : 0;
    out.push_back(r);
  };
  record("copy", 2 * f * n, [&] {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) z[i] = x[i];
  });
  record("triad", 3 * f * n, [&] {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) z[i] = x[i] + 0.5f * y[i];
  });
  const std::int64_t rows = n / row_width;
  // Two reads of each row (statistics, then normalise) usually hit cache: count one read, one
  // write.
  record("layernorm", 2 * f * n, [&] {
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* in = x.data() + r * row_width;
      float* o = z.data() + r * row_width;
      float sum = 0, sq = 0;
      for (int i = 0; i < row_width; ++i) {
        sum += in[i];
        sq += in[i] * in[i];
      }
      const float mean = sum / row_width;
      const float rstd = 1.0f / std::sqrt(std::max(sq / row_width - mean * mean, 0.0f) + 1e-5f);
      for (int i = 0; i < row_width; ++i) o[i] = (in[i] - mean) * rstd * y[i];
    }
  });
  return out;
}

}  // namespace fabtrain::bench
