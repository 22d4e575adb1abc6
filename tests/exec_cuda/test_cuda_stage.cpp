// The GPT-2 stage on the CUDA operations against the stage on the CPU's (the reference), block by
// block, on the PyTorch reference model of tests/exec/reference (gpt2-nano-sized): forward (loss,
// logits, a pipeline stage's output), backward (every parameter gradient, a pipeline stage's input
// gradient), tensor-parallel partials with tp=2, recomputation, and the AdamW kernel. Tolerances
// are fp32 round-off: the GPU sums in a different order. Each case needs a GPU and is skipped (exit
// 77, "SKIP: no CUDA device") when there is none.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "../exec/reference/reference_data.hpp"
#include "../exec/relative_difference.hpp"
#include "common/error.hpp"
#include "exec/cuda/cuda_check.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "exec/model/cuda/cuda_kernels.hpp"
#include "exec/model/cuda/cuda_ops.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "require_gpu.hpp"

using namespace fabtrain;

namespace {

using test::require_gpu;

using test::relative_difference;

constexpr double kTolerance = 2e-4;

std::vector<float> pattern(std::size_t n) {  // a deterministic gradient to send backward
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.01f * std::sin(0.37f * float(i));
  return v;
}

// A CPU and a CUDA stage over the same blocks, run side by side.
struct Pair {
  Gpt2Stage cpu;
  Gpt2Stage gpu;
  Pair(const test::Reference& ref, BlockRange blocks, int tp, int tp_rank)
      : cpu(ref.model, blocks, tp, tp_rank, ref.b, ref.t, 1),
        gpu(ref.model, blocks, tp, tp_rank, ref.b, ref.t, 1, cuda::make_cuda_ops()) {
    cpu.load_full(ref.params);
    gpu.load_full(ref.params);
  }
};

}  // namespace

TEST_CASE("CUDA stage: the whole model's loss, logits and gradients match the CPU stage") {
  require_gpu();
  const test::Reference ref = test::load_reference();
  const int blocks = block_count(ref.model);
  Pair p(ref, {0, blocks}, 1, 0);
  for (Stage* s : {static_cast<Stage*>(&p.cpu), static_cast<Stage*>(&p.gpu)}) {
    s->zero_grads();
    s->set_tokens(0, ref.x);
    s->set_targets(0, ref.y);
    for (int b = 0; b < blocks; ++b) s->forward(b, 0);
  }
  CHECK(p.gpu.loss(0) == doctest::Approx(p.cpu.loss(0)).epsilon(1e-5));
  CHECK(p.gpu.loss(0) == doctest::Approx(ref.loss).epsilon(1e-4));
  CHECK(relative_difference(p.gpu.logits(0), p.cpu.logits(0)) < kTolerance);
  for (Stage* s : {static_cast<Stage*>(&p.cpu), static_cast<Stage*>(&p.gpu)})
    for (int b = blocks - 1; b >= 0; --b) s->backward(b, 0, false);
  CHECK(relative_difference(p.gpu.grads(), p.cpu.grads()) < kTolerance);
  // Tensor by tensor, so a wrong kernel shows where it is.
  for (const ParamRun& run : p.cpu.param_runs()) {
    INFO("parameter run at full offset " << run.full_offset << ", " << run.count << " values");
    CHECK(relative_difference(p.gpu.grads().subspan(run.local_offset, run.count),
                              p.cpu.grads().subspan(run.local_offset, run.count)) < 1e-3);
  }
}

TEST_CASE("CUDA stage: a middle pipeline stage's output and input gradient match, block by block") {
  require_gpu();
  const test::Reference ref = test::load_reference();
  const int blocks = block_count(ref.model);
  const std::size_t nc = std::size_t(ref.b) * ref.t * ref.model.n_embd;
  // The embedding alone gives the input every later stage starts from.
  Gpt2Stage embed(ref.model, {0, 1}, 1, 0, ref.b, ref.t, 1);
  embed.load_full(ref.params);
  embed.set_tokens(0, ref.x);
  embed.forward(0, 0);
  const std::vector<float> x(embed.output(0).begin(), embed.output(0).end());
  const std::vector<float> dy = pattern(nc);
  for (int end = 2; end < blocks; ++end) {  // stages [1, end): one more block each time
    INFO("stage of blocks [1, " << end << ")");
    Pair p(ref, {1, end}, 1, 0);
    for (Stage* s : {static_cast<Stage*>(&p.cpu), static_cast<Stage*>(&p.gpu)}) {
      s->zero_grads();
      std::copy(x.begin(), x.end(), s->input(0).begin());
      for (int b = 1; b < end; ++b) s->forward(b, 0);
    }
    CHECK(relative_difference(p.gpu.output(0), p.cpu.output(0)) < kTolerance);
    for (Stage* s : {static_cast<Stage*>(&p.cpu), static_cast<Stage*>(&p.gpu)}) {
      std::copy(dy.begin(), dy.end(), s->output_grad(0).begin());
      for (int b = end - 1; b >= 1; --b) s->backward(b, 0, false);
    }
    CHECK(relative_difference(p.gpu.input_grad(0), p.cpu.input_grad(0)) < kTolerance);
    CHECK(relative_difference(p.gpu.grads(), p.cpu.grads()) < kTolerance);
  }
}

TEST_CASE("CUDA stage: tensor-parallel partials (tp=2) match the CPU ranks'") {
  require_gpu();
  const test::Reference ref = test::load_reference();
  const int blocks = block_count(ref.model), tp = 2;
  std::vector<std::unique_ptr<Pair>> ranks;
  for (int r = 0; r < tp; ++r)
    ranks.push_back(std::make_unique<Pair>(ref, BlockRange{0, blocks}, tp, r));
  auto split = [&](int b) {
    const BlockKind k = block_at(ref.model, b).kind;
    return k == BlockKind::attn || k == BlockKind::mlp;
  };
  // The tp all-reduce by hand: compare each rank's partial, then give every stage the CPU sum.
  auto reduce = [&](int b) {
    std::vector<float> sum(ranks[0]->cpu.tp_partial(b, 0).size(), 0.0f);
    for (int r = 0; r < tp; ++r) {
      CHECK(relative_difference(ranks[r]->gpu.tp_partial(b, 0), ranks[r]->cpu.tp_partial(b, 0)) <
            kTolerance);
      auto part = ranks[r]->cpu.tp_partial(b, 0);
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    }
    for (int r = 0; r < tp; ++r) {
      std::copy(sum.begin(), sum.end(), ranks[r]->cpu.tp_partial(b, 0).begin());
      std::copy(sum.begin(), sum.end(), ranks[r]->gpu.tp_partial(b, 0).begin());
    }
  };
  for (auto& p : ranks)
    for (Stage* s : {static_cast<Stage*>(&p->cpu), static_cast<Stage*>(&p->gpu)}) {
      s->zero_grads();
      s->set_tokens(0, ref.x);
      s->set_targets(0, ref.y);
    }
  for (int b = 0; b < blocks; ++b) {
    for (auto& p : ranks) {
      p->cpu.forward(b, 0);
      p->gpu.forward(b, 0);
    }
    if (!split(b)) continue;
    reduce(b);
    for (auto& p : ranks) {
      p->cpu.finish_forward(b, 0);
      p->gpu.finish_forward(b, 0);
    }
  }
  CHECK(ranks[1]->gpu.loss(0) == doctest::Approx(ranks[1]->cpu.loss(0)).epsilon(1e-5));
  for (int b = blocks - 1; b >= 0; --b) {
    for (auto& p : ranks) {
      p->cpu.backward(b, 0, false);
      p->gpu.backward(b, 0, false);
    }
    if (!split(b)) continue;
    reduce(b);
    for (auto& p : ranks) {
      p->cpu.finish_backward(b, 0);
      p->gpu.finish_backward(b, 0);
    }
  }
  for (int r = 0; r < tp; ++r) {
    INFO("tp rank " << r);
    CHECK(relative_difference(ranks[r]->gpu.grads(), ranks[r]->cpu.grads()) < kTolerance);
  }
}

TEST_CASE("CUDA stage: recomputation gives the same loss and gradients as kept activations") {
  require_gpu();
  const test::Reference ref = test::load_reference();
  const int blocks = block_count(ref.model);
  std::vector<std::vector<float>> grads;
  std::vector<float> losses;
  for (bool recompute : {false, true}) {
    Gpt2Stage s(ref.model, {0, blocks}, 1, 0, ref.b, ref.t, 1, cuda::make_cuda_ops());
    s.load_full(ref.params);
    s.set_recompute(recompute);
    s.set_tokens(0, ref.x);
    s.set_targets(0, ref.y);
    for (int b = 0; b < blocks; ++b) s.forward(b, 0);
    losses.push_back(s.loss(0));
    for (int b = blocks - 1; b >= 0; --b) s.backward(b, 0, recompute);
    grads.emplace_back(s.grads().begin(), s.grads().end());
  }
  CHECK(losses[0] == losses[1]);
  CHECK(relative_difference(grads[1], grads[0]) < 1e-6);
}

TEST_CASE("CUDA stage: bad use is refused by name, as on the CPU") {
  require_gpu();
  const test::Reference ref = test::load_reference();
  const ModelSpec& m = ref.model;
  CHECK_THROWS_AS(
      Gpt2Stage(m, {0, block_count(m) + 1}, 1, 0, ref.b, ref.t, 1, cuda::make_cuda_ops()), Error);
  Gpt2Stage s(m, {0, block_count(m)}, 1, 0, ref.b, ref.t, 1, cuda::make_cuda_ops());
  s.load_full(ref.params);
  CHECK_THROWS_AS(s.forward(0, 0), Error);          // no tokens yet
  CHECK_THROWS_AS(s.forward(0, 1), Error);          // one activation slot
  CHECK_THROWS_AS(s.backward(1, 0, false), Error);  // no forward to go back through
  CHECK_THROWS_AS(s.tp_partial(1, 0), Error);       // tp=1 has no partials
  std::vector<int> bad(ref.x);
  bad[0] = m.vocab_size;
  CHECK_THROWS_AS(s.set_tokens(0, bad), Error);
}

TEST_CASE("CUDA AdamW kernel matches the CPU AdamW over several steps") {
  require_gpu();
  const std::size_t n = 10007;
  std::vector<float> p(n), g(n), m(n, 0.0f), v(n, 0.0f);
  std::vector<unsigned char> mask(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = 0.05f * std::cos(0.1f * float(i));
    mask[i] = (i % 3) != 0;
  }
  cuda::DeviceArray<float> dp(n), dg(n), dm(n), dv(n);
  cuda::DeviceArray<unsigned char> dmask(n);
  CUDA_CHECK(cudaMemcpy(dp.data(), p.data(), n * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dm.data(), 0, n * 4));
  CUDA_CHECK(cudaMemset(dv.data(), 0, n * 4));
  CUDA_CHECK(cudaMemcpy(dmask.data(), mask.data(), n, cudaMemcpyHostToDevice));
  AdamW adamw;
  for (int step = 1; step <= 5; ++step) {
    for (std::size_t i = 0; i < n; ++i) g[i] = 0.01f * std::sin(0.3f * float(i) + float(step));
    CUDA_CHECK(cudaMemcpy(dg.data(), g.data(), n * 4, cudaMemcpyHostToDevice));
    adamw.update(p, g, m, v, mask, 1e-3f, step);
    cuda::adamw_update(dp.data(), dg.data(), dm.data(), dv.data(), dmask.data(), std::int64_t(n),
                       1e-3f, adamw.beta1, adamw.beta2, adamw.eps, adamw.weight_decay, step,
                       nullptr);
    CUDA_CHECK(cudaGetLastError());
  }
  std::vector<float> got(n);
  CUDA_CHECK(cudaMemcpy(got.data(), dp.data(), n * 4, cudaMemcpyDeviceToHost));
  CHECK(relative_difference(got, p) < 1e-5);
}
