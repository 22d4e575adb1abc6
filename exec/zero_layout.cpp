// ZeroLayout (see zero_layout.hpp).
#include "exec/zero_layout.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace fabtrain {
namespace {

// Calls f(local_begin, count, offset) for the pieces of region positions [pos, pos+count).
template <typename Segments, typename F>
void walk(const Segments& segments, std::int64_t pos, std::int64_t count, F&& f) {
  std::int64_t seen = 0, done = 0;
  for (const auto& [local, n] : segments) {
    if (done == count) return;
    const std::int64_t seg_end = seen + n;
    if (seg_end > pos + done) {
      const std::int64_t from = pos + done - seen;
      const std::int64_t take = std::min(n - from, count - done);
      f(local + from, take, done);
      done += take;
    }
    seen = seg_end;
  }
}

}  // namespace

ZeroLayout::ZeroLayout(const std::vector<ParamRun>& runs, std::int64_t wte_size, int parts)
    : parts_(parts) {
  if (parts < 1) fail("ZeroLayout: {} parts, at least 1 needed", parts);
  std::vector<std::pair<std::int64_t, std::pair<std::int64_t, std::int64_t>>> wte;  // full, seg
  std::vector<std::pair<std::int64_t, std::int64_t>> rest;
  for (const ParamRun& run : runs) {
    const std::int64_t in_wte = std::clamp<std::int64_t>(wte_size - run.full_offset, 0, run.count);
    if (in_wte > 0) wte.push_back({run.full_offset, {run.local_offset, in_wte}});
    if (run.count > in_wte) rest.push_back({run.local_offset + in_wte, run.count - in_wte});
  }
  std::sort(wte.begin(), wte.end());
  std::sort(rest.begin(), rest.end());
  for (const auto& [full, seg] : wte) {
    wte_.segments.push_back(seg);
    wte_.total += seg.second;
  }
  for (const auto& seg : rest) {
    rest_.segments.push_back(seg);
    rest_.total += seg.second;
  }
  chunk_a_ = (wte_.total + parts - 1) / parts;
  chunk_b_ = (rest_.total + parts - 1) / parts;
}

template <typename F>
void ZeroLayout::for_each_piece(int d, F&& f) const {
  const std::int64_t a_begin = d * chunk_a_, b_begin = d * chunk_b_;
  walk(wte_.segments, a_begin, std::clamp<std::int64_t>(wte_.total - a_begin, 0, chunk_a_), f);
  walk(rest_.segments, b_begin, std::clamp<std::int64_t>(rest_.total - b_begin, 0, chunk_b_),
       [&](std::int64_t at, std::int64_t n, std::int64_t off) { f(at, n, chunk_a_ + off); });
}

template <typename T>
void ZeroLayout::pack(std::span<const T> local, int d, std::span<T> chunk) const {
  std::fill(chunk.begin(), chunk.end(), T{});
  for_each_piece(d, [&](std::int64_t at, std::int64_t n, std::int64_t off) {
    std::copy_n(local.begin() + at, n, chunk.begin() + off);
  });
}

template <typename T>
void ZeroLayout::unpack(std::span<const T> chunk, int d, std::span<T> local) const {
  for_each_piece(d, [&](std::int64_t at, std::int64_t n, std::int64_t off) {
    std::copy_n(chunk.begin() + off, n, local.begin() + at);
  });
}

template void ZeroLayout::pack<float>(std::span<const float>, int, std::span<float>) const;
template void ZeroLayout::pack<unsigned char>(std::span<const unsigned char>, int,
                                              std::span<unsigned char>) const;
template void ZeroLayout::unpack<float>(std::span<const float>, int, std::span<float>) const;

void ZeroLayout::copy_wte_out(std::span<const float> local, std::span<float> out) const {
  walk(wte_.segments, 0, wte_.total, [&](std::int64_t at, std::int64_t n, std::int64_t off) {
    std::copy_n(local.begin() + at, n, out.begin() + off);
  });
}

void ZeroLayout::copy_wte_in(std::span<const float> in, std::span<float> local) const {
  walk(wte_.segments, 0, wte_.total, [&](std::int64_t at, std::int64_t n, std::int64_t off) {
    std::copy_n(in.begin() + off, n, local.begin() + at);
  });
}

}  // namespace fabtrain
