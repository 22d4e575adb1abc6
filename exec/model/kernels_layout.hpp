// The full llm.c parameter vector of a GPT-2 (with the padded vocabulary Vp): the offset and
// size of each of its 16 tensors in checkpoint order. Shared by the initialisation and by the
// stages that map their local shards onto it. Not here: the shards themselves (gpt2_stage.cpp).
#pragma once
#include <array>
#include <cstdint>

#include "models/model_spec.hpp"

namespace fabtrain {

enum FullTensor {
  t_wte,
  t_wpe,
  t_ln1w,
  t_ln1b,
  t_qkvw,
  t_qkvb,
  t_attprojw,
  t_attprojb,
  t_ln2w,
  t_ln2b,
  t_fcw,
  t_fcb,
  t_fcprojw,
  t_fcprojb,
  t_lnfw,
  t_lnfb,
  t_count
};

struct FullLayout {
  std::array<std::int64_t, t_count> offset{};
  std::array<std::int64_t, t_count> size{};
  std::int64_t total = 0;
  // Offset of tensor `which` for layer l (per-layer tensors hold L slices of size/L).
  std::int64_t at(FullTensor which, int layer, int n_layer) const {
    return offset[which] + (layer < 0 ? 0 : layer * (size[which] / n_layer));
  }
};

inline FullLayout full_layout(const ModelSpec& m) {
  const std::int64_t C = m.n_embd, L = m.n_layer;
  const std::array<std::int64_t, t_count> sizes = {std::int64_t(m.padded_vocab()) * C,
                                                   std::int64_t(m.n_ctx) * C,
                                                   L * C,
                                                   L * C,
                                                   L * 3 * C * C,
                                                   L * 3 * C,
                                                   L * C * C,
                                                   L * C,
                                                   L * C,
                                                   L * C,
                                                   L * 4 * C * C,
                                                   L * 4 * C,
                                                   L * C * 4 * C,
                                                   L * C,
                                                   C,
                                                   C};
  FullLayout layout;
  for (int i = 0; i < t_count; ++i) {
    layout.offset[i] = layout.total;
    layout.size[i] = sizes[i];
    layout.total += sizes[i];
  }
  return layout;
}

}  // namespace fabtrain
