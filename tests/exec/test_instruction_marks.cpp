// Instruction times from marks on a backend's queue (exec/play/instruction_marks.hpp): the
// arithmetic, its refusals, and the interpreter timing a stage whose backend has marks from them
// (the CUDA backend's events; here CPU operations with a counting clock in their place), with
// the same losses as the host-timed stage.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "exec/comm/loopback_communicator.hpp"
#include "exec/model/cpu_ops.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/play/instruction_marks.hpp"
#include "exec/play/interpreter.hpp"
#include "plan/schedule.hpp"

using namespace fabtrain;

TEST_CASE("instruction marks: instruction i runs from mark i to mark i+1, from mark 0") {
  const std::vector<double> marks = {0.0, 0.5, 0.5, 2.0};
  const auto t = timings_from_marks(marks, 3);
  REQUIRE(t.size() == 3);
  CHECK(t[0].start_s == 0.0);
  CHECK(t[0].duration_s == 0.5);
  CHECK(t[1].start_s == 0.5);
  CHECK(t[1].duration_s == 0.0);
  CHECK(t[2].start_s == 0.5);
  CHECK(t[2].duration_s == 1.5);
}

TEST_CASE("instruction marks: a missing, non-finite or backward mark is refused by its index") {
  CHECK_THROWS_WITH_AS(timings_from_marks(std::vector<double>{0.0, 1.0}, 2),
                       doctest::Contains("2 marks for 2 instructions"), Error);
  CHECK_THROWS_WITH_AS(
      timings_from_marks(std::vector<double>{0.0, std::numeric_limits<double>::quiet_NaN()}, 1),
      doctest::Contains("mark 1 is nan"), Error);
  CHECK_THROWS_WITH_AS(timings_from_marks(std::vector<double>{0.0, 2.0, 1.0}, 2),
                       doctest::Contains("mark 2 (1 s) precedes mark 1"), Error);
}

namespace {

// The CPU's operations with marks: mark k is read from a clock that advances one millisecond
// per mark recorded, so the times show which marks were recorded in which order.
class MarkingOps final : public Gpt2Ops {
 public:
  std::vector<int> recorded;  // mark indices, in recording order
  int synchronized = 0;

  std::string name() const override { return "cpu-with-marks"; }
  float* alloc(std::int64_t n) override { return cpu_->alloc(n); }
  void free(float* p) override { cpu_->free(p); }
  bool host_memory() const override { return true; }
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
    cpu_->linear_forward(o, i, w, b, n, id, od);
  }
  void linear_backward(float* di, float* dw, float* db, const float* dout, const float* i,
                       const float* w, int n, int id, int od) override {
    cpu_->linear_backward(di, dw, db, dout, i, w, n, id, od);
  }
  void attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh,
                         int hd) override {
    cpu_->attention_forward(y, att, qkv, b, t, nh, hd);
  }
  void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv, int b,
                          int t, int nh, int hd) override {
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
  bool has_marks() const override { return true; }
  void mark(int k) override { recorded.push_back(k); }
  std::vector<double> mark_seconds(int n) override {
    std::vector<double> seconds(std::size_t(n), -1.0);  // the latest recording of each
    for (std::size_t at = 0; at < recorded.size(); ++at)
      if (recorded[at] < n) seconds[std::size_t(recorded[at])] = 1e-3 * double(at);
    for (int k = n - 1; k >= 0; --k) seconds[std::size_t(k)] -= seconds[0];
    return seconds;
  }

 private:
  std::unique_ptr<Gpt2Ops> cpu_ = make_cpu_ops();
};

float first_loss(Stage& stage, const ModelSpec& model, const Schedule& schedule,
                 StepOutcome* outcome) {
  LoopbackHub hub(1);
  LoopbackCommunicator comm(hub, 0);
  comm.set_groups(schedule.groups);
  stage.load_full(init_full_parameters(model, 42));
  Interpreter interpreter(model, schedule, 0, stage, comm, AdamW{}, 1.0f);
  auto feed = [](int mb, std::span<int> tokens, std::span<int> targets) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = int((i * 7 + mb) % 64);
      targets[i] = int((i * 7 + mb + 1) % 64);
    }
  };
  interpreter.play_step(0, 1e-3f, feed);
  *outcome = interpreter.play_step(1, 1e-3f, feed);
  return outcome->mean_loss;
}

}  // namespace

TEST_CASE("a stage with marks is timed from them, once per step, and trains the same") {
  const ModelSpec model = load_model("gpt2-nano");
  const Schedule schedule = compile(model, parse_plan("dp=1,mb=2"), 4, 16);
  const BlockRange all{0, block_count(model)};
  auto ops = std::make_unique<MarkingOps>();
  MarkingOps& marking = *ops;
  Gpt2Stage marked(model, all, 1, 0, schedule.microbatch, 16, 2, std::move(ops));
  Gpt2Stage plain(model, all, 1, 0, schedule.microbatch, 16, 2);
  StepOutcome with_marks, without;
  CHECK(first_loss(marked, model, schedule, &with_marks) ==
        first_loss(plain, model, schedule, &without));
  const std::size_t n = schedule.ranks[0].size();
  MESSAGE("synchronized ", marking.synchronized, " times in 2 steps of ", n, " instructions");
  CHECK(marking.synchronized <= 2);  // once after each step, not after each instruction
  // Two steps, each: mark 0, then one after every instruction, in order.
  REQUIRE(marking.recorded.size() == 2 * (n + 1));
  for (std::size_t k = 0; k <= n; ++k) CHECK(marking.recorded[n + 1 + k] == int(k));
  REQUIRE(with_marks.timings.size() == n);
  for (std::size_t i = 0; i < n; ++i) {  // the second step's clock: 1 ms per mark
    CHECK(with_marks.timings[i].start_s == doctest::Approx(1e-3 * double(i)));
    CHECK(with_marks.timings[i].duration_s == doctest::Approx(1e-3));
  }
}
