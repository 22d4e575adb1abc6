// ZeroLayout (see zero_layout.hpp).
#include "exec/play/zero_layout.hpp"

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

ZeroLayout::ZeroLayout(const std::vector<ParamRun>& runs, std::int64_t wte_size, int parts,
                       const std::vector<Segments>& buckets)
    : parts_(parts) {
  if (parts < 1) fail("ZeroLayout: {} parts, at least 1 needed", parts);
  std::vector<std::pair<std::int64_t, std::pair<std::int64_t, std::int64_t>>> wte;  // full, seg
  Segments wte_local, all;
  std::int64_t local_total = 0;
  for (const ParamRun& run : runs) {
    const std::int64_t in_wte = std::clamp<std::int64_t>(wte_size - run.full_offset, 0, run.count);
    if (in_wte > 0) {
      wte.push_back({run.full_offset, {run.local_offset, in_wte}});
      wte_local.push_back({run.local_offset, in_wte});
    }
    all.push_back({run.local_offset, run.count});
    local_total += run.count;
  }
  std::sort(wte.begin(), wte.end());
  std::sort(wte_local.begin(), wte_local.end());
  std::sort(all.begin(), all.end());
  for (const auto& [full, seg] : wte) {
    wte_.segments.push_back(seg);
    wte_.total += seg.second;
  }
  const std::vector<Segments> sections = buckets.empty() ? std::vector<Segments>{all} : buckets;
  std::int64_t covered = 0;
  for (std::size_t k = 0; k < sections.size(); ++k) {
    Region rest;
    Segments sorted = sections[k];
    std::sort(sorted.begin(), sorted.end());
    for (auto [at, n] : sorted) {  // the segment less its wte elements
      covered += n;
      const std::int64_t end = at + n;
      for (const auto& [w, wn] : wte_local) {
        if (w + wn <= at || w >= end) continue;
        if (wte_bucket_ >= 0 && wte_bucket_ != int(k))
          fail("ZeroLayout: wte elements in gradient buckets {} and {}", wte_bucket_, k);
        wte_bucket_ = int(k);
        if (w > at) rest.segments.push_back({at, w - at});
        at = std::min(end, w + wn);
      }
      if (end > at) rest.segments.push_back({at, end - at});
    }
    for (const auto& seg : rest.segments) rest.total += seg.second;
    rest_.push_back(std::move(rest));
  }
  if (covered != local_total)
    fail("ZeroLayout: the gradient buckets cover {} of the stage's {} parameters", covered,
         local_total);
  chunk_a_ = (wte_.total + parts - 1) / parts;
  chunk_size_ = chunk_a_;
  for (const Region& r : rest_) {
    chunk_b_.push_back((r.total + parts - 1) / parts);
    b_offset_.push_back(chunk_size_);
    chunk_size_ += chunk_b_.back();
  }
}

std::int64_t ZeroLayout::rest_total() const {
  std::int64_t total = 0;
  for (const Region& r : rest_) total += r.total;
  return total;
}

std::int64_t ZeroLayout::bucket_part(int k) const {
  return (k == wte_bucket_ ? chunk_a_ : 0) + chunk_b_.at(k);
}

std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> ZeroLayout::bucket_in_chunk(
    int k) const {
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> out;
  const std::int64_t a = k == wte_bucket_ ? chunk_a_ : 0;
  if (a > 0) out.push_back({0, 0, a});
  if (chunk_b_.at(k) > 0) out.push_back({b_offset_[k], a, chunk_b_[k]});
  return out;
}

template <typename F>
void ZeroLayout::for_each_piece(int d, F&& f) const {
  const std::int64_t a_begin = d * chunk_a_;
  walk(wte_.segments, a_begin, std::clamp<std::int64_t>(wte_.total - a_begin, 0, chunk_a_), f);
  for (std::size_t k = 0; k < rest_.size(); ++k) {
    const std::int64_t b_begin = d * chunk_b_[k];
    walk(rest_[k].segments, b_begin,
         std::clamp<std::int64_t>(rest_[k].total - b_begin, 0, chunk_b_[k]),
         [&](std::int64_t at, std::int64_t n, std::int64_t off) { f(at, n, b_offset_[k] + off); });
  }
}

template <typename F>
void ZeroLayout::for_each_bucket_piece(int k, int d, F&& f) const {
  std::int64_t a = 0;
  if (k == wte_bucket_) {
    const std::int64_t a_begin = d * chunk_a_;
    walk(wte_.segments, a_begin, std::clamp<std::int64_t>(wte_.total - a_begin, 0, chunk_a_), f);
    a = chunk_a_;
  }
  const std::int64_t b_begin = d * chunk_b_.at(k);
  walk(rest_[k].segments, b_begin,
       std::clamp<std::int64_t>(rest_[k].total - b_begin, 0, chunk_b_[k]),
       [&](std::int64_t at, std::int64_t n, std::int64_t off) { f(at, n, a + off); });
}

template <typename T>
void ZeroLayout::pack_bucket(std::span<const T> local, int k, int d, std::span<T> part) const {
  std::fill(part.begin(), part.end(), T{});
  for_each_bucket_piece(k, d, [&](std::int64_t at, std::int64_t n, std::int64_t off) {
    std::copy_n(local.begin() + at, n, part.begin() + off);
  });
}

template <typename T>
void ZeroLayout::unpack_bucket(std::span<const T> part, int k, int d, std::span<T> local) const {
  for_each_bucket_piece(k, d, [&](std::int64_t at, std::int64_t n, std::int64_t off) {
    std::copy_n(part.begin() + off, n, local.begin() + at);
  });
}

template void ZeroLayout::pack_bucket<float>(std::span<const float>, int, int,
                                             std::span<float>) const;
template void ZeroLayout::unpack_bucket<float>(std::span<const float>, int, int,
                                               std::span<float>) const;

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

std::vector<CopyRun> ZeroLayout::pieces(int d) const {
  std::vector<CopyRun> runs;
  for_each_piece(d, [&](std::int64_t at, std::int64_t n, std::int64_t off) {
    runs.push_back({at, off, n});
  });
  return runs;
}

std::vector<CopyRun> ZeroLayout::bucket_pieces(int k, int d) const {
  std::vector<CopyRun> runs;
  for_each_bucket_piece(k, d, [&](std::int64_t at, std::int64_t n, std::int64_t off) {
    runs.push_back({at, off, n});
  });
  return runs;
}

std::vector<CopyRun> ZeroLayout::reversed(std::vector<CopyRun> runs) {
  for (CopyRun& r : runs) std::swap(r.from, r.to);
  return runs;
}

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
