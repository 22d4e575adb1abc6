// The ZeRO shard layout of one rank's local parameters: which local elements make up data-parallel
// rank d's chunk. The parameters split into the tied embedding wte (region A) and everything
// else (region B); each region is padded to a multiple of the dp size and dp rank d owns chunk
// d = (its slice of A, its slice of B). Keeping wte apart lets the first and last pipeline stage
// sum their tied-embedding gradients shard against shard: both chunks start with the same wte
// slice. wte elements go in full-offset order, the rest in local order.
//
// Gradient buckets (exec/play/bucket_segments.hpp): region B splits into one section per bucket,
// each padded and divided over the dp ranks on its own, so dp rank d owns 1/dp of EACH bucket and a
// bucket's reduce-scatter and all-gather move only that bucket: chunk d = (its slice of A, its
// slice of bucket 0's rest, of bucket 1's rest, ...). wte belongs to the one bucket holding its
// block; that bucket's part is (A slice, its rest slice). Without buckets, one bucket holds
// everything (the layout above). The buckets never depend on plan.overlap, so neither does the
// ownership. A pure unit: no communication, no stage (the interpreter packs and unpacks with it
// around its collectives).
#pragma once
#include <cstdint>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "exec/model/gpt2_stage.hpp"
#include "exec/play/bucket_segments.hpp"

namespace fabtrain {

class ZeroLayout {
 public:
  // runs: the stage's parameter runs; wte_size: Vp*C (full offsets below it are wte);
  // parts: the dp size when sharded, 1 otherwise (one chunk holding everything); buckets: each
  // bucket's local segments (together every local element once), empty: one bucket.
  ZeroLayout(const std::vector<ParamRun>& runs, std::int64_t wte_size, int parts,
             const std::vector<Segments>& buckets = {});

  int parts() const { return parts_; }
  std::int64_t chunk_size() const { return chunk_size_; }  // floats per chunk, padded
  std::int64_t wte_chunk() const { return chunk_a_; }  // the first wte_chunk() of a chunk are wte
  std::int64_t wte_total() const { return wte_.total; }
  const Segments& wte_segments() const { return wte_.segments; }  // local, in full-offset order
  std::int64_t rest_total() const;
  int buckets() const { return int(rest_.size()); }
  int wte_bucket() const { return wte_bucket_; }  // -1: no wte on this stage
  // Floats of bucket k in one chunk (its wte slice when it holds wte, then its rest slice).
  std::int64_t bucket_part(int k) const;
  // Where bucket k's part lies in a chunk: (chunk offset, part offset, count), at most two.
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> bucket_in_chunk(int k) const;

  // chunk (chunk_size() values) <- chunk d of local; padding set to T{}.
  template <typename T>
  void pack(std::span<const T> local, int d, std::span<T> chunk) const;
  // The elements of chunk d in local <- chunk; other local elements untouched.
  template <typename T>
  void unpack(std::span<const T> chunk, int d, std::span<T> local) const;
  // The same for bucket k alone: part (bucket_part(k) values) <-> bucket k's share of chunk d.
  template <typename T>
  void pack_bucket(std::span<const T> local, int k, int d, std::span<T> part) const;
  template <typename T>
  void unpack_bucket(std::span<const T> part, int k, int d, std::span<T> local) const;
  // The copies pack() makes for chunk d (from: local offset, to: chunk offset), in its order, and
  // pack_bucket()'s for bucket k: what a backend copies in its own memory (Gpt2Ops::copy_runs);
  // unpacking is the same runs reversed (reversed()).
  std::vector<CopyRun> pieces(int d) const;
  std::vector<CopyRun> bucket_pieces(int k, int d) const;
  static std::vector<CopyRun> reversed(std::vector<CopyRun> runs);
  // All wte elements of local, in full-offset order, to and from out (wte_total() values).
  void copy_wte_out(std::span<const float> local, std::span<float> out) const;
  void copy_wte_in(std::span<const float> in, std::span<float> local) const;

 private:
  // f(local offset, count, chunk offset) for every run of shard d, wte's part first.
  template <typename F>
  void for_each_piece(int d, F&& f) const;
  // f(local offset, count, part offset) for bucket k's pieces of shard d.
  template <typename F>
  void for_each_bucket_piece(int k, int d, F&& f) const;
  struct Region {
    std::vector<std::pair<std::int64_t, std::int64_t>> segments;  // (local begin, count)
    std::int64_t total = 0;
  };
  int parts_ = 1;
  Region wte_;
  std::vector<Region> rest_;                      // per bucket
  std::vector<std::int64_t> chunk_b_, b_offset_;  // per bucket: floats per chunk, offset in it
  std::int64_t chunk_a_ = 0, chunk_size_ = 0;
  int wte_bucket_ = -1;
};

}  // namespace fabtrain
