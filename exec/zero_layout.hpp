// The ZeRO shard layout of one rank's local parameters: which local elements make up data-parallel
// rank d's chunk. The parameters split into the tied embedding wte (region A) and everything
// else (region B); each region is padded to a multiple of the dp size and dp rank d owns chunk
// d = (its slice of A, its slice of B). Keeping wte apart lets the first and last pipeline stage
// sum their tied-embedding gradients shard against shard: both chunks start with the same wte
// slice. wte elements go in full-offset order, the rest in local order. A pure unit: no
// communication, no stage (the interpreter packs and unpacks with it around its collectives).
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "exec/gpt2_stage.hpp"

namespace fabtrain {

class ZeroLayout {
 public:
  // runs: the stage's parameter runs; wte_size: Vp*C (full offsets below it are wte);
  // parts: the dp size when sharded, 1 otherwise (one chunk holding everything).
  ZeroLayout(const std::vector<ParamRun>& runs, std::int64_t wte_size, int parts);

  int parts() const { return parts_; }
  std::int64_t chunk_size() const { return chunk_a_ + chunk_b_; }  // floats per chunk, padded
  std::int64_t wte_chunk() const { return chunk_a_; }  // the first wte_chunk() of a chunk are wte
  std::int64_t wte_total() const { return wte_.total; }
  std::int64_t rest_total() const { return rest_.total; }

  // chunk (chunk_size() values) <- chunk d of local; padding set to T{}.
  template <typename T>
  void pack(std::span<const T> local, int d, std::span<T> chunk) const;
  // The elements of chunk d in local <- chunk; other local elements untouched.
  template <typename T>
  void unpack(std::span<const T> chunk, int d, std::span<T> local) const;
  // All wte elements of local, in full-offset order, to and from out (wte_total() values).
  void copy_wte_out(std::span<const float> local, std::span<float> out) const;
  void copy_wte_in(std::span<const float> in, std::span<float> local) const;

 private:
  // f(local offset, count, chunk offset) for every run of shard d, wte's part first.
  template <typename F>
  void for_each_piece(int d, F&& f) const;
  struct Region {
    std::vector<std::pair<std::int64_t, std::int64_t>> segments;  // (local begin, count)
    std::int64_t total = 0;
  };
  int parts_ = 1;
  Region wte_, rest_;
  std::int64_t chunk_a_ = 0, chunk_b_ = 0;
};

}  // namespace fabtrain
