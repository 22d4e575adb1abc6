// CpuOps (see cpu_ops.hpp): each call is one kernel of exec/model/kernels.hpp; memory is zeroed
// host memory, so upload and download are plain copies (none at all between a buffer and itself).
#include "exec/model/cpu_ops.hpp"

#include <algorithm>
#include <vector>

#include "exec/model/kernels.hpp"

namespace fabtrain {
namespace {

struct CpuIds final : Ids {
  std::vector<int> ids;
};

const int* ids_of(const Ids& ids) { return static_cast<const CpuIds&>(ids).ids.data(); }

class CpuOps final : public Gpt2Ops {
 public:
  std::string name() const override { return "cpu"; }

  float* alloc(std::int64_t count) override { return new float[std::size_t(count)](); }
  void free(float* data) override { delete[] data; }
  bool host_memory() const override { return true; }
  void upload(float* dst, const float* host_src, std::int64_t count) override {
    if (dst != host_src) std::copy_n(host_src, count, dst);
  }
  void download(float* host_dst, const float* src, std::int64_t count) override {
    if (host_dst != src) std::copy_n(src, count, host_dst);
  }
  void zero(float* data, std::int64_t count) override { std::fill_n(data, count, 0.0f); }
  void synchronize() override {}
  std::unique_ptr<Ids> make_ids() override { return std::make_unique<CpuIds>(); }
  void set_ids(Ids& ids, std::span<const int> host_ids, bool) override {
    static_cast<CpuIds&>(ids).ids.assign(host_ids.begin(), host_ids.end());
  }

  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                         const float* b, int n, int c) override {
    kernels::layernorm_forward(out, mean, rstd, x, w, b, n, c);
  }
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                          const float* w, const float* mean, const float* rstd, int n,
                          int c) override {
    kernels::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, n, c);
  }
  void linear_forward(float* out, const float* in, const float* w, const float* bias, int n,
                      int in_dim, int out_dim) override {
    kernels::linear_forward(out, in, w, bias, n, in_dim, out_dim);
  }
  void linear_backward(float* din, float* dw, float* dbias, const float* dout, const float* in,
                       const float* w, int n, int in_dim, int out_dim) override {
    kernels::linear_backward(din, dw, dbias, dout, in, w, n, in_dim, out_dim);
  }
  void attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh,
                         int hd) override {
    kernels::attention_forward(y, att, qkv, b, t, nh, hd);
  }
  void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv, int b,
                          int t, int nh, int hd) override {
    kernels::attention_backward(dqkv, dy, att, qkv, b, t, nh, hd);
  }
  void gelu_forward(float* out, const float* x, std::int64_t count) override {
    kernels::gelu_forward(out, x, count);
  }
  void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t count) override {
    kernels::gelu_backward(dx, x, dout, count);
  }
  void crossentropy_forward(float* lse, float* row_loss, const float* logits, const Ids& targets,
                            int n, int v, int vp) override {
    kernels::crossentropy_forward(lse, row_loss, logits, ids_of(targets), n, v, vp);
  }
  void crossentropy_backward(float* logits_to_dlogits, const float* lse, const Ids& targets, int n,
                             int v, int vp) override {
    kernels::crossentropy_backward(logits_to_dlogits, lse, ids_of(targets), n, v, vp);
  }
  void embedding_forward(float* out, const Ids& tokens, const float* wte, const float* wpe, int n,
                         int t, int c) override {
    kernels::embedding_forward(out, ids_of(tokens), wte, wpe, n, t, c);
  }
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const Ids& tokens, int n,
                          int t, int c) override {
    kernels::embedding_backward(dwte, dwpe, dout, ids_of(tokens), n, t, c);
  }
  void residual_add(float* out, const float* a, const float* b, const float* bias, int n,
                    int c) override {
    kernels::residual_add(out, a, b, bias, n, c);
  }
  void copy_runs(float* dst, const float* src, std::span<const CopyRun> runs) override {
    for (const CopyRun& r : runs) std::copy_n(src + r.from, r.count, dst + r.to);
  }
  void add_into(float* dst, const float* src, std::int64_t count) override {
    for (std::int64_t i = 0; i < count; ++i) dst[i] += src[i];
  }
};

}  // namespace

std::unique_ptr<Gpt2Ops> make_cpu_ops() { return std::make_unique<CpuOps>(); }

}  // namespace fabtrain
