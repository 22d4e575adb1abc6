// The shape of one matrix product as a kernel runs it: an M x K by K x N product (2*M*N*K
// FLOPs), and how many such products an instruction runs. What the plan compiler carries per
// Forward/Backward so that the cost model can charge tile and wave quantization on the GPU the
// simulator plays (sim/cost/matmul_efficiency.hpp). Not here: the efficiency itself, or FLOPs
// of the attention core (its products are kept apart, models/costs.hpp).
#pragma once
#include <vector>

namespace fabtrain {

struct MatmulShape {
  double m = 0, n = 0, k = 0;
  int count = 1;
  double flops() const { return 2 * m * n * k * count; }
};

// Adds `count` products of shape m x n x k to `shapes`, merging with an equal shape already there.
void add_product(std::vector<MatmulShape>& shapes, double m, double n, double k, int count = 1);
// Adds every product of `more` to `shapes` (merging equal shapes).
void add_products(std::vector<MatmulShape>& shapes, const std::vector<MatmulShape>& more);

}  // namespace fabtrain
