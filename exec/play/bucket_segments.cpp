// Bucket segments (see bucket_segments.hpp).
#include "exec/play/bucket_segments.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "exec/model/kernels_layout.hpp"
#include "models/costs.hpp"

namespace fabtrain {
namespace {

// The full-layout tensor holding offset f.
int tensor_at(const FullLayout& layout, std::int64_t f) {
  int t = 0;
  while (t + 1 < t_count && layout.offset[t + 1] <= f) ++t;
  return t;
}

bool per_layer(int t) { return t >= t_ln1w && t <= t_fcprojb; }

// Where the slice of tensor t holding f ends (a per-layer tensor: its layer's end).
std::int64_t slice_end(const FullLayout& layout, const ModelSpec& m, int t, std::int64_t f) {
  if (!per_layer(t)) return layout.offset[t] + layout.size[t];
  const std::int64_t each = layout.size[t] / m.n_layer;
  return layout.offset[t] + ((f - layout.offset[t]) / each + 1) * each;
}

void add(Segments& s, std::int64_t at, std::int64_t n) {
  if (!s.empty() && s.back().first + s.back().second == at)
    s.back().second += n;
  else
    s.push_back({at, n});
}

}  // namespace

int block_of_element(const ModelSpec& model, std::int64_t f, bool holds_embed) {
  const FullLayout layout = full_layout(model);
  if (f < 0 || f >= layout.total)
    fail("parameter offset {} outside the model's {} parameters", f, layout.total);
  const int head = block_count(model) - 1;
  const int t = tensor_at(layout, f);
  if (t == t_wte) return holds_embed ? 0 : head;
  if (t == t_wpe) return 0;
  if (t == t_lnfw || t == t_lnfb) return head;
  const int layer = int((f - layout.offset[t]) / (layout.size[t] / model.n_layer));
  return first_block_of_layer(layer) + (t >= t_ln2w ? 1 : 0);
}

std::vector<Segments> bucket_segments(const ModelSpec& model, const std::vector<ParamRun>& runs,
                                      const std::vector<BlockRange>& buckets, bool holds_embed) {
  const FullLayout layout = full_layout(model);
  std::vector<std::pair<std::int64_t, std::pair<std::int64_t, int>>> pieces;  // local, (n, block)
  for (const ParamRun& run : runs) {
    std::int64_t f = run.full_offset;
    const std::int64_t end = run.full_offset + run.count;
    while (f < end) {
      const int t = tensor_at(layout, f);
      const std::int64_t stop = std::min(end, slice_end(layout, model, t, f));
      pieces.push_back({run.local_offset + (f - run.full_offset),
                        {stop - f, block_of_element(model, f, holds_embed)}});
      f = stop;
    }
  }
  std::sort(pieces.begin(), pieces.end());
  std::vector<Segments> out(buckets.size());
  for (const auto& [local, piece] : pieces) {
    // Not a structured binding: clang 14 cannot capture one in the lambda below.
    const auto n = piece.first;
    const auto block = piece.second;
    auto in = std::find_if(buckets.begin(), buckets.end(),
                           [&](const BlockRange& b) { return block >= b.begin && block < b.end; });
    if (in == buckets.end())
      fail("local parameters at {} belong to block {}, which no gradient bucket covers", local,
           block);
    add(out[std::size_t(in - buckets.begin())], local, n);
  }
  return out;
}

}  // namespace fabtrain
