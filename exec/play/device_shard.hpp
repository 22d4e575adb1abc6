// ZeRO's shard where the stage's parameters live: for a backend that runs the optimizer in its
// own memory (a GPU) and a communicator that moves that memory (NCCL), the shard's parameters,
// gradients and AdamW moments stay there, and so do the packed buffers its reduce-scatters and
// all-gathers move. The arithmetic is the host shard's (exec/play/interpreter.cpp) as the
// backend's operations: packing and unpacking by ZeroLayout's pieces, adding a reduce-scatter's
// result, scaling, the norm's sum of squares, AdamW. The host sees the moments only for
// checkpoints (moments, set_moments) and the parameters only through the stage.
// Not here: which collective runs when (the interpreter), the layout itself (zero_layout.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "exec/model/gpt2_ops.hpp"
#include "exec/play/zero_layout.hpp"

namespace fabtrain {

struct AdamW;

class DeviceShard {
 public:
  // zero: the interpreter's layout (outlives this); position: this rank's chunk; decay and
  // counted: the shard's masks (chunk_size() entries each).
  DeviceShard(Gpt2Ops& ops, const ZeroLayout& zero, int position,
              std::span<const unsigned char> decay, std::span<const unsigned char> counted);

  std::int64_t size() const { return zero_.chunk_size(); }
  float* params() { return params_.data(); }
  float* grads() { return grads_.data(); }
  // The packed input and output of request `request` (-1: a blocking one), in the backend's
  // memory; grown only, kept from step to step (no allocation in a step after the first).
  std::pair<float*, float*> buffers(int request, std::int64_t in, std::int64_t out);

  // to <- chunk d of local (bucket k's part of it; k < 0: the whole chunk), padding zero.
  void pack(const float* local, int k, int d, float* to);
  // The elements of chunk d (bucket k's part) in local <- from.
  void unpack(const float* from, int k, int d, float* local);
  // part <- the shard parameters' share of bucket k (k < 0: all of them).
  void take_params(int k, float* part);
  // The shard's gradients += a reduce-scatter's result for bucket k (k < 0: the whole chunk).
  void add_gradients(int k, const float* part);

  void zero_gradients();
  void scale_gradients(float factor);
  double gradient_square_sum();  // over the counted elements, in double
  // One AdamW step of the shard, the gradients multiplied by grad_scale first; step from 1.
  void adamw(const AdamW& adamw, float lr, int step, float grad_scale);
  void moments(std::vector<float>* m, std::vector<float>* v);
  void set_moments(std::span<const float> m, std::span<const float> v);

 private:
  // Pack runs of (bucket k, chunk d), and their reverse, made once.
  const std::pair<std::vector<CopyRun>, std::vector<CopyRun>>& runs(int k, int d);
  std::vector<CopyRun> part_in_chunk(int k) const;  // from: chunk offset, to: part offset

  Gpt2Ops& ops_;
  const ZeroLayout& zero_;
  int position_;
  Buffer params_, grads_, m_, v_, decay_, counted_;
  std::map<std::pair<int, int>, std::pair<std::vector<CopyRun>, std::vector<CopyRun>>> runs_;
  std::map<int, std::pair<Buffer, Buffer>> buffers_;
};

}  // namespace fabtrain
