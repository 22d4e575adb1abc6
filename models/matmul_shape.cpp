// Merging product shapes: an instruction over many layers runs the same few shapes many times,
// so it carries each shape once with a count.
#include "models/matmul_shape.hpp"

namespace fabtrain {

void add_product(std::vector<MatmulShape>& shapes, double m, double n, double k, int count) {
  if (count <= 0 || m <= 0 || n <= 0 || k <= 0) return;
  for (auto& s : shapes)
    if (s.m == m && s.n == n && s.k == k) {
      s.count += count;
      return;
    }
  shapes.push_back({m, n, k, count});
}

void add_products(std::vector<MatmulShape>& shapes, const std::vector<MatmulShape>& more) {
  for (const auto& s : more) add_product(shapes, s.m, s.n, s.k, s.count);
}

}  // namespace fabtrain
