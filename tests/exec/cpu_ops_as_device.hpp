// The CPU's operations behind the face of a device backend, for tests of the executor's device
// paths without a GPU: the stage treats its memory (host memory) as the backend's own, uploads
// and downloads copy, and it runs the optimizer's element-wise work the way the interpreter's host
// code does (the same loops and AdamW::update, so the bits are the host path's); it may also keep
// marks (Gpt2Ops::mark) on a counting clock, make one cross-entropy backward overflow (an
// infinite gradient, as an fp16 product past 65504 gives), and record the largest operands of
// the matrix products it ran (what the CUDA backend's 16-bit scratch would hold).
#pragma once
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "exec/model/cpu_ops.hpp"
#include "exec/model/gpt2_ops.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/half_operands.hpp"

namespace fabtrain {

class CpuOpsAsDevice final : public Gpt2Ops {
 public:
  // device: the stage treats the memory as the backend's own and runs the optimizer through it;
  // marks: marks on a clock that advances one millisecond per mark recorded.
  CpuOpsAsDevice(bool device, bool marks) : device_(device), marks_(marks) {}
  std::vector<int> recorded;  // mark indices, in recording order
  int synchronized = 0;
  int overflow_call = -1;          // the cross-entropy backward (counted from 0) that overflows
  int crossentropy_backwards = 0;  // calls so far
  OperandSpans products;           // of every linear layer and attention run so far

  std::string name() const override { return "cpu-as-device"; }
  float* alloc(std::int64_t n) override { return cpu_->alloc(n); }
  void free(float* p) override { cpu_->free(p); }
  bool host_memory() const override { return !device_; }
  void upload(float* d, const float* s, std::int64_t n) override { cpu_->upload(d, s, n); }
  void download(float* d, const float* s, std::int64_t n) override { cpu_->download(d, s, n); }
  void zero(float* p, std::int64_t n) override { cpu_->zero(p, n); }
  void synchronize() override { ++synchronized; }
  std::unique_ptr<Ids> make_ids() override { return cpu_->make_ids(); }
  void set_ids(Ids& ids, std::span<const int> h, bool by) override { cpu_->set_ids(ids, h, by); }
  void layernorm_forward(float* o, float* m, float* r, const float* x, const float* w,
                         const float* b, int n, int c) override {
    cpu_->layernorm_forward(o, m, r, x, w, b, n, c);
  }
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                          const float* w, const float* m, const float* r, int n, int c) override {
    cpu_->layernorm_backward(dx, dw, db, dout, x, w, m, r, n, c);
  }
  void linear_forward(float* o, const float* i, const float* w, const float* b, int n, int id,
                      int od) override {
    products.cover(linear_operand_spans(n, id, od));
    cpu_->linear_forward(o, i, w, b, n, id, od);
  }
  void linear_backward(float* di, float* dw, float* db, const float* dout, const float* i,
                       const float* w, int n, int id, int od) override {
    products.cover(linear_operand_spans(n, id, od));
    cpu_->linear_backward(di, dw, db, dout, i, w, n, id, od);
  }
  void attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh,
                         int hd) override {
    products.cover(attention_operand_spans(t, nh, hd));
    cpu_->attention_forward(y, att, qkv, b, t, nh, hd);
  }
  void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv, int b,
                          int t, int nh, int hd) override {
    products.cover(attention_operand_spans(t, nh, hd));
    cpu_->attention_backward(dqkv, dy, att, qkv, b, t, nh, hd);
  }
  void gelu_forward(float* o, const float* x, std::int64_t n) override {
    cpu_->gelu_forward(o, x, n);
  }
  void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t n) override {
    cpu_->gelu_backward(dx, x, dout, n);
  }
  void crossentropy_forward(float* lse, float* rl, const float* logits, const Ids& t, int n, int v,
                            int vp) override {
    cpu_->crossentropy_forward(lse, rl, logits, t, n, v, vp);
  }
  void crossentropy_backward(float* l, const float* lse, const Ids& t, int n, int v,
                             int vp) override {
    cpu_->crossentropy_backward(l, lse, t, n, v, vp);
    if (crossentropy_backwards++ == overflow_call) l[0] = INFINITY;
  }
  void embedding_forward(float* o, const Ids& t, const float* wte, const float* wpe, int n, int tt,
                         int c) override {
    cpu_->embedding_forward(o, t, wte, wpe, n, tt, c);
  }
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const Ids& t, int n, int tt,
                          int c) override {
    cpu_->embedding_backward(dwte, dwpe, dout, t, n, tt, c);
  }
  void residual_add(float* o, const float* a, const float* b, const float* bias, int n,
                    int c) override {
    cpu_->residual_add(o, a, b, bias, n, c);
  }
  bool runs_optimizer() const override { return device_; }
  void scale(float* data, std::int64_t n, float factor) override {
    for (std::int64_t i = 0; i < n; ++i) data[i] *= factor;
  }
  double masked_square_sum(const float* data, const float* mask, std::int64_t n) override {
    double sum = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (mask[i] != 0.0f) sum += double(data[i]) * data[i];
    return sum;
  }
  void adamw(float* p, const float* g, float* m, float* v, const float* decay, std::int64_t n,
             const AdamWArgs& a) override {
    std::vector<float> scaled(g, g + n);
    if (a.grad_scale != 1.0f)
      for (float& x : scaled) x *= a.grad_scale;
    const std::vector<unsigned char> mask(decay, decay + n);
    const AdamW adamw{a.beta1, a.beta2, a.eps, a.weight_decay};
    adamw.update({p, std::size_t(n)}, scaled, {m, std::size_t(n)}, {v, std::size_t(n)}, mask, a.lr,
                 a.step);
  }
  void copy_runs(float* dst, const float* src, std::span<const CopyRun> runs) override {
    cpu_->copy_runs(dst, src, runs);
  }
  void add_into(float* dst, const float* src, std::int64_t n) override {
    cpu_->add_into(dst, src, n);
  }
  bool has_marks() const override { return marks_; }
  void mark(int k) override { recorded.push_back(k); }
  std::vector<double> mark_seconds(int n) override {
    std::vector<double> seconds(std::size_t(n), -1.0);  // the latest recording of each
    for (std::size_t at = 0; at < recorded.size(); ++at)
      if (recorded[at] < n) seconds[std::size_t(recorded[at])] = 1e-3 * double(at);
    for (int k = n - 1; k >= 0; --k) seconds[std::size_t(k)] -= seconds[0];
    return seconds;
  }

 private:
  bool device_, marks_;
  std::unique_ptr<Gpt2Ops> cpu_ = make_cpu_ops();
};

}  // namespace fabtrain
