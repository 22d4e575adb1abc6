// How much of a GPU's matrix-product rate a product of a given shape keeps: tile and wave
// quantization (NVIDIA's Matrix Multiplication Background User's Guide). A product's output is
// cut into tile x tile blocks, one per thread block; a block at the edge still does a whole
// tile's work (tile quantization), and the blocks run in waves of one per SM, the last wave
// partly idle (wave quantization). Small K and low arithmetic intensity are not here: the
// roofline on the products' operand bytes (sim/cost/compute_cost.cpp) charges them.
#pragma once
#include <vector>

#include "models/matmul_shape.hpp"

namespace fabtrain {

// Useful work over work done, in (0, 1]: M*N / (tiles * tile^2) times blocks / (waves * sms),
// blocks = tiles * the split-K slices (fewer tiles than SMs: min(sms / tiles, K / tile)
// slices, rounded down). 1 where sms or tile is 0 (not modelled).
double shape_efficiency(const MatmulShape& shape, int sms, int tile);
// Of a list of products, their FLOPs over the FLOPs their quantized work takes at the same rate:
// sum(flops) / sum(flops / efficiency). 1 for an empty list.
double products_efficiency(const std::vector<MatmulShape>& shapes, int sms, int tile);

}  // namespace fabtrain
