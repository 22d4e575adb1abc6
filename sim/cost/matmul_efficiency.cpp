// Tile and wave quantization of one product, and their FLOP-weighted mean over an instruction's
// products. Tiles are square (the catalog's compute.matmul_tile) and one thread block per SM at a
// time (assumption: cuBLAS's large tiles fill an SM). A product of fewer tiles than SMs splits
// its K reduction over blocks (split-K: CUTLASS's Efficient GEMM in CUDA, 'Parallelized
// Reductions', for small M x N and large K; the reduction of the slices is not charged).
#include "sim/cost/matmul_efficiency.hpp"

#include <algorithm>
#include <cmath>

namespace fabtrain {

double shape_efficiency(const MatmulShape& s, int sms, int tile) {
  if (sms <= 0 || tile <= 0 || s.m <= 0 || s.n <= 0) return 1;
  const double rows = std::ceil(s.m / tile), cols = std::ceil(s.n / tile);
  const double tiles = rows * cols;
  // Fewer tiles than SMs: the reduction over K is split over thread blocks (split-K), as many
  // slices as fill the SMs, each at least one tile deep.
  const double splits =
      tiles >= sms ? 1 : std::max(1.0, std::min(std::floor(sms / tiles), std::floor(s.k / tile)));
  const double blocks = tiles * splits;
  const double waves = std::ceil(blocks / sms);
  const double tile_fill = (s.m * s.n) / (tiles * double(tile) * tile);
  const double wave_fill = blocks / (waves * sms);
  return tile_fill * wave_fill;
}

double products_efficiency(const std::vector<MatmulShape>& shapes, int sms, int tile) {
  double flops = 0, quantized = 0;
  for (const auto& s : shapes) {
    const double f = s.flops();
    if (!(f > 0)) continue;
    flops += f;
    quantized += f / shape_efficiency(s, sms, tile);
  }
  return quantized > 0 ? flops / quantized : 1;
}

}  // namespace fabtrain
