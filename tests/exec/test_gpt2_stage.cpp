// The CPU GPT-2 stage against itself under every split a plan can make: tensor parallel (tp=2,
// 4, the tp ranks simulated in one process by summing their partials by hand), pipeline splits
// (output -> input and input_grad -> output_grad passed by hand), recomputation; plus the
// parameter mapping, the initialisation, AdamW and the errors for bad use. All runs use the
// PyTorch reference model (tests/exec/reference) so parameters and gradients are not tiny.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "common/error.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "reference/reference_data.hpp"

using namespace fabtrain;

namespace {

// Several pipeline stages x tp ranks of one model replica, all in this process.
struct Replica {
  ModelSpec m;
  int tp = 1;
  std::vector<BlockRange> ranges;
  std::vector<std::vector<std::unique_ptr<Gpt2Stage>>> ranks;  // [stage][tp rank]

  Replica(const test::Reference& ref, std::vector<int> cuts, int tp_, int slots, bool recompute)
      : m(ref.model), tp(tp_) {
    cuts.insert(cuts.begin(), 0);
    cuts.push_back(block_count(m));
    for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
      ranges.push_back({cuts[s], cuts[s + 1]});
      ranks.emplace_back();
      for (int r = 0; r < tp; ++r) {
        ranks[s].push_back(std::make_unique<Gpt2Stage>(m, ranges[s], tp, r, ref.b, ref.t, slots));
        ranks[s][r]->load_full(ref.params);
        ranks[s][r]->set_recompute(recompute);
      }
    }
  }

  bool split(int block) const {
    const BlockKind k = block_at(m, block).kind;
    return tp > 1 && (k == BlockKind::attn || k == BlockKind::mlp);
  }
  // The tp all-reduce, by hand.
  void all_reduce_partial(std::size_t s, int block, int mb) {
    std::vector<float> sum(ranks[s][0]->tp_partial(block, mb).size(), 0.0f);
    for (auto& rank : ranks[s]) {
      auto p = rank->tp_partial(block, mb);
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += p[i];
    }
    for (auto& rank : ranks[s])
      std::copy(sum.begin(), sum.end(), rank->tp_partial(block, mb).begin());
  }

  void forward(int mb, const std::vector<int>& x, const std::vector<int>& y) {
    for (std::size_t s = 0; s < ranks.size(); ++s) {
      for (int r = 0; r < tp; ++r) {
        if (s == 0) ranks[s][r]->set_tokens(mb, x);
        if (s + 1 == ranks.size()) ranks[s][r]->set_targets(mb, y);
        if (s > 0) {
          auto out = ranks[s - 1][r]->output(mb);
          std::copy(out.begin(), out.end(), ranks[s][r]->input(mb).begin());
        }
      }
      for (int block = ranges[s].begin; block < ranges[s].end; ++block) {
        for (auto& rank : ranks[s]) rank->forward(block, mb);
        if (split(block)) {
          all_reduce_partial(s, block, mb);
          for (auto& rank : ranks[s]) rank->finish_forward(block, mb);
        }
      }
    }
  }

  void backward(int mb, bool recompute) {
    for (std::size_t s = ranks.size(); s-- > 0;) {
      if (s + 1 < ranks.size())
        for (int r = 0; r < tp; ++r) {
          auto g = ranks[s + 1][r]->input_grad(mb);
          std::copy(g.begin(), g.end(), ranks[s][r]->output_grad(mb).begin());
        }
      for (int block = ranges[s].end - 1; block >= ranges[s].begin; --block) {
        for (auto& rank : ranks[s]) rank->backward(block, mb, recompute);
        if (split(block)) {
          all_reduce_partial(s, block, mb);
          for (auto& rank : ranks[s]) rank->finish_backward(block, mb);
        }
      }
    }
  }

  float loss(int mb) { return ranks.back()[0]->loss(mb); }

  // Gradients in the full layout: tp ranks' shards side by side (replicated parameters must
  // agree between ranks), stages summed (the tied wte is held by the first and the last).
  std::vector<float> full_grads(std::int64_t total) {
    std::vector<float> sum(total, 0.0f);
    std::int64_t disagreements = 0;
    for (auto& stage : ranks) {
      std::vector<float> stage_full(total, NAN);
      for (auto& rank : stage)
        for (const ParamRun& run : rank->param_runs())
          for (std::int64_t i = 0; i < run.count; ++i) {
            float& dst = stage_full[run.full_offset + i];
            const float g = rank->grads()[run.local_offset + i];
            if (!std::isnan(dst) && std::abs(dst - g) > 1e-6f * (1 + std::abs(g))) ++disagreements;
            dst = g;
          }
      for (std::int64_t i = 0; i < total; ++i)
        if (!std::isnan(stage_full[i])) sum[i] += stage_full[i];
    }
    CHECK(disagreements == 0);  // replicated parameters got the same gradient on every tp rank
    return sum;
  }
};

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float err = 0;
  for (std::size_t i = 0; i < a.size(); ++i) err = std::max(err, std::abs(a[i] - b[i]));
  return err;
}

// One step of one microbatch on a replica split by `cuts` with tp ranks; loss and full grads.
std::pair<float, std::vector<float>> one_step(const test::Reference& ref, std::vector<int> cuts,
                                              int tp, bool recompute) {
  Replica replica(ref, cuts, tp, 1, false);
  replica.forward(0, ref.x, ref.y);
  replica.backward(0, recompute);
  return {replica.loss(0), replica.full_grads(std::int64_t(ref.params.size()))};
}

}  // namespace

TEST_CASE("param_runs cover each stage's params once and the tp shards partition the full vector") {
  const test::Reference ref = test::load_reference();
  const std::int64_t total = full_parameter_count(ref.model);
  for (int tp : {1, 2, 4}) {
    std::vector<int> holders(total, 0);  // how many tp ranks hold each full element
    for (int r = 0; r < tp; ++r) {
      Gpt2Stage stage(ref.model, {0, block_count(ref.model)}, tp, r, ref.b, ref.t, 1);
      std::vector<int> local(stage.params().size(), 0);
      for (const ParamRun& run : stage.param_runs()) {
        REQUIRE(run.full_offset >= 0);
        REQUIRE(run.full_offset + run.count <= total);
        for (std::int64_t i = 0; i < run.count; ++i) {
          ++local[run.local_offset + i];
          ++holders[run.full_offset + i];
        }
      }
      CHECK(std::all_of(local.begin(), local.end(), [](int c) { return c == 1; }));
      stage.load_full(ref.params);  // and loading copies exactly those runs
      for (const ParamRun& run : stage.param_runs())
        CHECK(std::equal(ref.params.begin() + run.full_offset,
                         ref.params.begin() + run.full_offset + run.count,
                         stage.params().begin() + run.local_offset));
    }
    // Split tensors are held once over the tp group, replicated ones by every rank.
    const int C = ref.model.n_embd;
    const std::int64_t qkvw =
        std::int64_t(ref.model.padded_vocab() + ref.model.n_ctx) * C + 2 * ref.model.n_layer * C;
    CHECK(holders[0] == tp);          // wte
    CHECK(holders[qkvw] == 1);        // first element of qkvw
    CHECK(holders[total - 1] == tp);  // lnfb
    const auto ones = std::count(holders.begin(), holders.end(), 1);
    const auto all = std::count(holders.begin(), holders.end(), tp);
    CHECK(ones + (tp > 1 ? all : 0) == total);
  }
}

TEST_CASE("tensor parallel tp=2 and tp=4 give the loss and gradients of tp=1") {
  const test::Reference ref = test::load_reference();
  const auto [loss1, grads1] = one_step(ref, {}, 1, false);
  CHECK(loss1 == doctest::Approx(ref.loss).epsilon(1e-5));
  for (int tp : {2, 4}) {
    CAPTURE(tp);
    const auto [loss, grads] = one_step(ref, {}, tp, false);
    CHECK(std::abs(loss - loss1) < 1e-5f);
    CHECK(max_abs_diff(grads, grads1) < 1e-5f);
  }
}

TEST_CASE("a pipeline split passing activations and gradients by hand equals one stage") {
  const test::Reference ref = test::load_reference();
  const auto [loss1, grads1] = one_step(ref, {}, 1, false);
  const int blocks = block_count(ref.model);
  for (int cut = 1; cut < blocks;
       ++cut) {  // every split point: after embed, attn, mlp, before head
    CAPTURE(cut);
    const auto [loss, grads] = one_step(ref, {cut}, 1, false);
    CHECK(std::abs(loss - loss1) < 1e-6f);
    CHECK(max_abs_diff(grads, grads1) < 1e-6f);
  }
  const auto [loss3, grads3] = one_step(ref, {1, 3}, 2, false);  // three stages with tp=2
  CHECK(std::abs(loss3 - loss1) < 1e-5f);
  CHECK(max_abs_diff(grads3, grads1) < 1e-5f);
}

TEST_CASE("recomputation gives the gradients of stored activations") {
  const test::Reference ref = test::load_reference();
  // Two microbatches (the second with shifted tokens), both forwards before both backwards: in
  // recompute mode the shared activation slot holds microbatch 1 when microbatch 0 goes back.
  std::vector<int> x2(ref.x), y2(ref.y);
  std::rotate(x2.begin(), x2.begin() + 3, x2.end());
  std::rotate(y2.begin(), y2.begin() + 5, y2.end());
  auto run = [&](bool recompute_mode, bool recompute, int tp) {
    Replica replica(ref, {4}, tp, 2, recompute_mode);
    replica.forward(0, ref.x, ref.y);
    replica.forward(1, x2, y2);
    replica.backward(0, recompute);
    replica.backward(1, recompute);
    return std::make_pair(replica.loss(0) + replica.loss(1),
                          replica.full_grads(std::int64_t(ref.params.size())));
  };
  const auto [loss_kept, grads_kept] = run(false, false, 1);
  const auto [loss_re, grads_re] = run(false, true, 1);
  const auto [loss_mode, grads_mode] = run(true, true, 1);
  const auto [loss_tp, grads_tp] = run(true, true, 2);
  CHECK(loss_re == loss_kept);
  CHECK(max_abs_diff(grads_re, grads_kept) == 0.0f);
  CHECK(loss_mode == loss_kept);
  CHECK(max_abs_diff(grads_mode, grads_kept) == 0.0f);
  CHECK(std::abs(loss_tp - loss_kept) < 1e-5f);
  CHECK(max_abs_diff(grads_tp, grads_kept) < 1e-5f);
  // And the two microbatches really differ (else the shared slot would go unnoticed).
  const auto [loss_single, grads_single] = one_step(ref, {}, 1, false);
  CHECK(max_abs_diff(grads_kept, grads_single) > 1e-3f);
}

TEST_CASE("AdamW matches a hand-computed update and a few steps reduce the loss") {
  AdamW adamw;  // beta1 0.9, beta2 0.95, eps 1e-8, weight decay 0.1
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, m(3, 0.0f), v(3, 0.0f);
  const std::vector<float> g1 = {0.1f, -0.2f, 0.3f}, g2 = {-0.4f, 0.1f, 0.3f};
  const std::vector<unsigned char> decay = {1, 0, 1};
  const float lr = 0.01f;
  // Step 1: bias-corrected m/sqrt(v) is sign(g); decay shrinks p by (1 - lr*wd) first (PyTorch).
  std::vector<double> expect(3);
  for (int i = 0; i < 3; ++i)
    expect[i] = p[i] * (1.0 - (decay[i] ? lr * 0.1 : 0.0)) - lr * (g1[i] > 0 ? 1.0 : -1.0);
  adamw.update(p, g1, m, v, decay, lr, 1);
  for (int i = 0; i < 3; ++i) CHECK(p[i] == doctest::Approx(expect[i]).epsilon(1e-6));
  // Step 2 from the moments' definitions.
  for (int i = 0; i < 3; ++i) {
    const double m2 = 0.9 * (0.1 * g1[i]) + 0.1 * g2[i];
    const double v2 = 0.95 * (0.05 * g1[i] * g1[i]) + 0.05 * g2[i] * g2[i];
    const double m_hat = m2 / (1 - 0.9 * 0.9), v_hat = v2 / (1 - 0.95 * 0.95);
    expect[i] = p[i] * (1.0 - (decay[i] ? lr * 0.1 : 0.0)) - lr * m_hat / (std::sqrt(v_hat) + 1e-8);
  }
  adamw.update(p, g2, m, v, decay, lr, 2);
  for (int i = 0; i < 3; ++i) CHECK(p[i] == doctest::Approx(expect[i]).epsilon(1e-6));
  CHECK_THROWS_AS(adamw.update(p, g2, m, v, decay, lr, 0), Error);
  CHECK_THROWS_AS(adamw.update(p, std::vector<float>(2), m, v, decay, lr, 3), Error);

  // Training on one fixed batch: the loss goes down step after step.
  const test::Reference ref = test::load_reference();
  Gpt2Stage stage(ref.model, {0, block_count(ref.model)}, 1, 0, ref.b, ref.t, 1);
  stage.load_full(ref.params);
  std::vector<unsigned char> mask(stage.params().size(), 0);
  for (const ParamRun& run : stage.param_runs())
    std::fill_n(mask.begin() + run.local_offset, run.count, run.decay ? 1 : 0);
  std::vector<float> ms(mask.size(), 0.0f), vs(mask.size(), 0.0f);
  std::vector<float> losses;
  for (int step = 1; step <= 6; ++step) {
    stage.zero_grads();
    stage.set_tokens(0, ref.x);
    stage.set_targets(0, ref.y);
    for (int b = 0; b < block_count(ref.model); ++b) stage.forward(b, 0);
    losses.push_back(stage.loss(0));
    for (int b = block_count(ref.model) - 1; b >= 0; --b) stage.backward(b, 0, false);
    stage.release(0);
    adamw.update(stage.params(), stage.grads(), ms, vs, mask, 1e-3f, step);
  }
  for (std::size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
  CHECK(losses.back() < losses.front() - 0.05f);
}

TEST_CASE("init_full_parameters is deterministic and follows GPT-2's initialisation") {
  const ModelSpec m{"tiny", 2, 48, 4, 32, 100};
  const auto a = init_full_parameters(m, 7), b = init_full_parameters(m, 7);
  const auto c = init_full_parameters(m, 8);
  REQUIRE(std::int64_t(a.size()) == full_parameter_count(m));
  CHECK(a == b);
  CHECK(a != c);
  const std::int64_t C = 48, Vp = m.padded_vocab();
  auto stats = [&](std::int64_t offset, std::int64_t count) {
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      sum += a[offset + i];
      sq += double(a[offset + i]) * a[offset + i];
    }
    return std::make_pair(sum / count, std::sqrt(sq / count - (sum / count) * (sum / count)));
  };
  const auto [wte_mean, wte_std] = stats(0, 100 * C);
  CHECK(std::abs(wte_mean) < 0.002);
  CHECK(wte_std == doctest::Approx(0.02).epsilon(0.05));
  CHECK(std::all_of(a.begin() + 100 * C, a.begin() + Vp * C, [](float x) { return x == 0.0f; }));
  const std::int64_t ln1w = (Vp + 32) * C;
  CHECK(std::all_of(a.begin() + ln1w, a.begin() + ln1w + 2 * C, [](float x) { return x == 1.0f; }));
  const std::int64_t attprojw = ln1w + 4 * C + 2 * 3 * C * C + 2 * 3 * C;
  const auto [proj_mean, proj_std] = stats(attprojw, 2 * C * C);
  CHECK(proj_std == doctest::Approx(0.02 / 2.0).epsilon(0.05));  // scaled by 1/sqrt(2L)
}

TEST_CASE("bad use of a stage is a clear error") {
  const test::Reference ref = test::load_reference();
  const ModelSpec& m = ref.model;
  CHECK_THROWS_AS(Gpt2Stage(m, {0, block_count(m)}, 3, 0, 2, 16, 1),
                  Error);  // 3 does not divide 4 heads
  CHECK_THROWS_AS(Gpt2Stage(m, {0, block_count(m) + 1}, 1, 0, 2, 16, 1), Error);
  CHECK_THROWS_AS(Gpt2Stage(m, {0, 3}, 1, 0, 2, 64, 1), Error);  // t beyond the context of 32
  Gpt2Stage stage(m, {0, 3}, 1, 0, ref.b, ref.t, 1);
  std::vector<int> bad(ref.x);
  bad[5] = m.vocab_size;
  CHECK_THROWS_AS(stage.set_tokens(0, bad), Error);
  CHECK_THROWS_AS(stage.set_tokens(0, std::vector<int>(3, 0)), Error);
  CHECK_THROWS_AS(stage.forward(0, 0), Error);          // no tokens yet
  CHECK_THROWS_AS(stage.forward(3, 0), Error);          // not this stage's block
  CHECK_THROWS_AS(stage.forward(0, 1), Error);          // only one activation slot
  CHECK_THROWS_AS(stage.backward(1, 0, false), Error);  // no forward yet
  CHECK_THROWS_AS(stage.tp_partial(1, 0), Error);       // tp=1 has no partials
  CHECK_THROWS_AS(stage.loss(0), Error);                // no head here
  CHECK_THROWS_AS(stage.load_full(std::vector<float>(10)), Error);
}
