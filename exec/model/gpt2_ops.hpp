// The operations a GPT-2 stage is made of, as one backend runs them (ggml's split of the graph
// from its backends): memory (alloc, upload, download, synchronize) and the forward and backward
// of LayerNorm, linear, attention, GELU, cross-entropy, embedding and the residual add. One
// Gpt2Stage (exec/model/gpt2_stage.hpp) calls them; exec/model/cpu_ops.hpp implements them over the
// CPU kernels (the reference), exec/model/cuda/cuda_ops.hpp over the CUDA kernels and cuBLAS.
//
// Shapes, set/accumulate rules and layouts are those of the CPU kernels (exec/model/kernels.hpp).
// Pointers are the backend's memory (from alloc), except where a call says host. Calls may be
// queued: download() and synchronize() are the points where the host sees finished work. A
// backend keeps the scratch its operations need (one Gpt2Ops per stage).
// Not here: which block runs which operation, parameter layout, communication.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace fabtrain {

// Token ids (or targets) of one microbatch in a backend's memory, in the form its embedding and
// cross-entropy read (the CUDA backend also groups the rows by token for the embedding backward).
class Ids {
 public:
  virtual ~Ids() = default;
};

// One AdamW step's scalars for Gpt2Ops::adamw (the gradient is multiplied by grad_scale first).
struct AdamWArgs {
  float lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  int step = 1;
  float grad_scale = 1;
};

// count floats copied from offset `from` of one buffer to offset `to` of another.
struct CopyRun {
  std::int64_t from = 0, to = 0, count = 0;
};

class Gpt2Ops {
 public:
  virtual ~Gpt2Ops() = default;
  virtual std::string name() const = 0;

  // Memory. alloc gives count floats (contents undefined, zero on the CPU); free takes them back.
  virtual float* alloc(std::int64_t count) = 0;
  virtual void free(float* data) = 0;
  // True when the backend's memory is host memory: then the stage hands its buffers out directly
  // and upload/download between a buffer and itself do nothing.
  virtual bool host_memory() const = 0;
  virtual void upload(float* dst, const float* host_src, std::int64_t count) = 0;
  virtual void download(float* host_dst, const float* src,
                        std::int64_t count) = 0;  // complete on return
  virtual void zero(float* data, std::int64_t count) = 0;
  virtual void synchronize() = 0;  // waits for the queued work
  virtual std::unique_ptr<Ids> make_ids() = 0;
  // Copies n host ids in; by_token: also prepare the embedding backward's grouping.
  virtual void set_ids(Ids& ids, std::span<const int> host_ids, bool by_token) = 0;

  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* x,
                                 const float* w, const float* b, int n, int c) = 0;
  virtual void layernorm_backward(float* dx, float* dw, float* db, const float* dout,
                                  const float* x, const float* w, const float* mean,
                                  const float* rstd, int n, int c) = 0;
  virtual void linear_forward(float* out, const float* in, const float* w, const float* bias, int n,
                              int in_dim, int out_dim) = 0;
  virtual void linear_backward(float* din, float* dw, float* dbias, const float* dout,
                               const float* in, const float* w, int n, int in_dim, int out_dim) = 0;
  virtual void attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh,
                                 int hd) = 0;
  virtual void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv,
                                  int b, int t, int nh, int hd) = 0;
  virtual void gelu_forward(float* out, const float* x, std::int64_t count) = 0;
  virtual void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t count) = 0;
  // Per row of logits (n, vp): lse = log-sum-exp over the first v columns and row_loss = lse
  // minus the target's logit (the stage sums the rows on the host, in order, in double).
  virtual void crossentropy_forward(float* lse, float* row_loss, const float* logits,
                                    const Ids& targets, int n, int v, int vp) = 0;
  virtual void crossentropy_backward(float* logits_to_dlogits, const float* lse, const Ids& targets,
                                     int n, int v, int vp) = 0;
  virtual void embedding_forward(float* out, const Ids& tokens, const float* wte, const float* wpe,
                                 int n, int t, int c) = 0;
  virtual void embedding_backward(float* dwte, float* dwpe, const float* dout, const Ids& tokens,
                                  int n, int t, int c) = 0;
  virtual void residual_add(float* out, const float* a, const float* b, const float* bias, int n,
                            int c) = 0;

  // The optimizer's element-wise work in the backend's memory, for a backend that keeps the
  // parameters off the host (runs_optimizer()): the stage then runs the step where they are. The
  // CPU's optimizer is the interpreter's host code, the reference. Masks are 0/1 floats.
  virtual bool runs_optimizer() const { return false; }
  virtual void scale(float* data, std::int64_t count, float factor) { unsupported("scale"); }
  // The sum of data[i]^2 over i with mask[i] != 0, in double, the same bits on every run.
  virtual double masked_square_sum(const float* data, const float* mask, std::int64_t count) {
    unsupported("masked_square_sum");
  }
  virtual void adamw(float* params, const float* grads, float* m, float* v, const float* decay,
                     std::int64_t count, const AdamWArgs& args) {
    unsupported("adamw");
  }

  // Moving and adding in the backend's memory, for ZeRO's shard where the parameters live
  // (exec/play/device_shard.hpp): dst[r.to + i] = src[r.from + i] for every run (runs do not
  // overlap in dst), and dst[i] += src[i].
  virtual void copy_runs(float* dst, const float* src, std::span<const CopyRun> runs) {
    unsupported("copy_runs");
  }
  virtual void add_into(float* dst, const float* src, std::int64_t count) {
    unsupported("add_into");
  }

  // Marks on the backend's queue, to time work without waiting for it
  // (exec/play/instruction_marks.hpp): mark(k) records mark k where the queue is now; after
  // synchronize(), mark_seconds(n) gives marks 0..n-1 in seconds after mark 0. A backend that
  // works synchronously has none (the host clock times it).
  virtual bool has_marks() const { return false; }
  virtual void mark(int k) { unsupported("mark"); }
  virtual std::vector<double> mark_seconds(int n) { unsupported("mark_seconds"); }

 private:
  [[noreturn]] void unsupported(const char* op) const {
    fail("the {} backend does not run {} (it works on the host)", name(), op);
  }
};

// count floats of a backend's memory that give themselves back. sized() reallocates when the
// count changes (the contents are then undefined); grown() only ever grows, for scratch.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { release(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept : ops_(other.ops_), data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      ops_ = other.ops_;
      data_ = other.data_;
      size_ = other.size_;
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  float* sized(Gpt2Ops& ops, std::int64_t count) {
    if (count != size_) {
      release();
      ops_ = &ops;
      data_ = count > 0 ? ops.alloc(count) : nullptr;
      size_ = count;
    }
    return data_;
  }
  float* grown(Gpt2Ops& ops, std::int64_t count) {
    return count > size_ ? sized(ops, count) : data_;
  }
  float* data() const { return data_; }
  std::int64_t size() const { return size_; }

 private:
  void release() {
    if (data_) ops_->free(data_);
    data_ = nullptr;
    size_ = 0;
  }
  Gpt2Ops* ops_ = nullptr;
  float* data_ = nullptr;
  std::int64_t size_ = 0;
};

}  // namespace fabtrain
