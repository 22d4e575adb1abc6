// The reference initialisation of the full GPT-2 parameter vector (llm.c layout with Vp), the
// same for every plan: each value is a pure function of (seed, index), from a counter-based
// generator (splitmix64 + Box-Muller) written here, so it does not depend on the libc, on the
// thread count or on the order of generation. Not here: loading checkpoints.
#include <cmath>
#include <cstdint>

#include "common/error.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/kernels_layout.hpp"

namespace fabtrain {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1]: 53 random bits, never 0 (log of it is taken).
double uniform(std::uint64_t bits) { return (double((bits >> 11)) + 1.0) * 0x1.0p-53; }

// A standard normal from (seed, index) through Box-Muller on two hashed uniforms.
float normal(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t key = splitmix64(seed ^ splitmix64(index));
  const double u1 = uniform(splitmix64(key));
  const double u2 = uniform(splitmix64(key + 1));
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

void fill_normal(std::vector<float>& p, std::int64_t offset, std::int64_t count, float std_dev,
                 std::uint64_t seed) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i)
    p[offset + i] = std_dev * normal(seed, std::uint64_t(offset + i));
}

}  // namespace

std::int64_t full_parameter_count(const ModelSpec& m) { return full_layout(m).total; }

std::vector<float> init_full_parameters(const ModelSpec& m, std::uint64_t seed) {
  validate(m);
  const FullLayout layout = full_layout(m);
  std::vector<float> p(layout.total, 0.0f);
  constexpr float std_dev = 0.02f;
  const float residual_std = std_dev / std::sqrt(2.0f * m.n_layer);
  // wte: only the V real rows; the pad rows stay zero.
  fill_normal(p, layout.offset[t_wte], std::int64_t(m.vocab_size) * m.n_embd, std_dev, seed);
  for (FullTensor w : {t_wpe, t_qkvw, t_fcw})
    fill_normal(p, layout.offset[w], layout.size[w], std_dev, seed);
  for (FullTensor w : {t_attprojw, t_fcprojw})
    fill_normal(p, layout.offset[w], layout.size[w], residual_std, seed);
  for (FullTensor w : {t_ln1w, t_ln2w, t_lnfw})
    std::fill_n(p.begin() + layout.offset[w], layout.size[w], 1.0f);
  return p;
}

}  // namespace fabtrain
