// A grow-only pool of buffers for what a step keeps in flight (staged transfers, pending sends):
// acquire() hands out the smallest free buffer that is large enough, and only when none is does
// it allocate; release() gives a buffer back for the next request. After the first step the same
// pattern of requests finds its buffers free, so the hot path never allocates or frees (a
// cudaFree synchronises the whole device, behind transfers that wait for a peer). Storage is
// anything with a constructor from a count and data()/size() (DeviceArray<float> on the GPU; a
// host vector in the tests). Not thread-safe; buffers are freed with the pool.
#pragma once
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

namespace fabtrain::cuda {

template <typename Storage>
class BufferPool {
 public:
  // A buffer of at least count elements; its slot is what release() takes back.
  int acquire(std::int64_t count) {
    int best = -1;
    for (int i = 0; i < int(slots_.size()); ++i)
      if (!busy_[i] && slots_[i].size() >= count &&
          (best < 0 || slots_[i].size() < slots_[best].size()))
        best = i;
    if (best < 0) {
      slots_.emplace_back(count);
      busy_.push_back(false);
      best = int(slots_.size()) - 1;
      ++allocations_;
    }
    busy_[best] = true;
    return best;
  }
  void release(int slot) {
    if (slot >= 0) busy_.at(slot) = false;
  }
  auto* data(int slot) { return slots_.at(slot).data(); }
  // Buffers allocated so far (the tests: constant after the first step).
  int allocations() const { return allocations_; }
  int in_use() const {
    int n = 0;
    for (bool b : busy_) n += b;
    return n;
  }

 private:
  std::deque<Storage> slots_;  // deque: a new slot never moves the others
  std::vector<bool> busy_;
  int allocations_ = 0;
};

}  // namespace fabtrain::cuda
