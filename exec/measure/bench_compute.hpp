// Compute measurements of `fabtrain-exec bench` on one rank: the matrix products of a GPT-2
// model's layers (qkv, attproj, fc, fcproj, lm head; the forward product and the two backward
// products, input and weight gradients) through cblas_sgemm, and the memory bandwidth of the
// element-wise kernels (stream copy and triad, a LayerNorm-like row pass) with OpenMP.
// Not here: the network (exec/measure/bench_network.hpp) or the file
// (apps/fabtrain-exec/cmd_bench.cpp).
#pragma once
#include <string>
#include <vector>

#include "exec/measure/bench_timing.hpp"
#include "models/model_spec.hpp"

namespace fabtrain::bench {

// C = op(A) * op(B) with C of m x n and inner dimension k, as the executor's kernels call it.
struct GemmShape {
  std::string name;  // qkv, attproj, fc, fcproj, lm_head
  std::string pass;  // forward, backward_input, backward_weight
  int m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * m * n * k; }
};

// The products of one layer and the head for `rows` = B*T tokens, in the executor's layouts.
std::vector<GemmShape> gpt2_gemm_shapes(const ModelSpec& model, int rows);

struct GemmResult {
  GemmShape shape;
  double seconds = 0;  // median
  double flops_per_s = 0;
};
GemmResult measure_gemm(const GemmShape& shape, const Repetitions& reps);

struct MemoryResult {
  std::string kernel;  // copy, triad, layernorm
  double bytes = 0;    // moved per call (reads + writes)
  double seconds = 0;  // median
  double bytes_per_s = 0;
};
// Arrays of `array_bytes` each; rows of `row_width` floats for the LayerNorm-like pass.
std::vector<MemoryResult> measure_memory(double array_bytes, int row_width,
                                         const Repetitions& reps);

}  // namespace fabtrain::bench
