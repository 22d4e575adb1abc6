// The CPU GPT-2 stage against PyTorch: one forward and backward of the small reference model
// (tests/exec/reference/make_reference.py, computed in float64) must give the same logits, loss
// and gradients of every parameter, within tolerances tighter than llm.c's fp32 check.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "exec/model/gpt2_stage.hpp"
#include "reference/reference_data.hpp"

using namespace fabtrain;

TEST_CASE("gpt2 stage matches the PyTorch reference: logits, loss and all gradients") {
  const test::Reference ref = test::load_reference();
  const ModelSpec& m = ref.model;
  REQUIRE(std::int64_t(ref.params.size()) == full_parameter_count(m));

  Gpt2Stage stage(m, BlockRange{0, block_count(m)}, 1, 0, ref.b, ref.t, 1);
  stage.load_full(ref.params);
  stage.zero_grads();
  stage.set_tokens(0, ref.x);
  stage.set_targets(0, ref.y);
  for (int block = 0; block < block_count(m); ++block) stage.forward(block, 0);

  CHECK(stage.loss(0) == doctest::Approx(ref.loss).epsilon(1e-5));
  const auto logits = stage.logits(0);
  REQUIRE(logits.size() == ref.logits.size());
  float logit_err = 0;
  for (std::size_t i = 0; i < logits.size(); ++i)
    logit_err = std::max(logit_err, std::abs(logits[i] - ref.logits[i]));
  CHECK(logit_err < 1e-5f);

  for (int block = block_count(m) - 1; block >= 0; --block) stage.backward(block, 0, false);
  // Map the local gradients to the full layout (one stage, tp=1: the runs cover it all).
  std::vector<float> full(ref.grads.size(), NAN);
  for (const ParamRun& run : stage.param_runs())
    std::copy_n(stage.grads().begin() + run.local_offset, run.count,
                full.begin() + run.full_offset);
  float grad_err = 0, grad_max = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    REQUIRE_FALSE(std::isnan(full[i]));
    grad_err = std::max(grad_err, std::abs(full[i] - ref.grads[i]));
    grad_max = std::max(grad_max, std::abs(ref.grads[i]));
  }
  MESSAGE("max |grad - reference| = " << grad_err << " (max |grad| " << grad_max << ")");
  CHECK(grad_max > 1e-2f);  // the reference is not degenerate
  CHECK(grad_err < 1e-5f);
}
