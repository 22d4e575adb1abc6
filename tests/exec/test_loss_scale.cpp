// Dynamic loss scaling (exec/play/loss_scale.hpp): the scaler's decisions (an overflow skips the
// step and halves the scale, growth after its interval of applied steps, divergence at the
// smallest scale, bad settings refused), and the interpreter with it on the CPU over the
// loopback communicator: a power-of-two scale gives the same losses and parameters TO THE LAST
// BIT as none (scaling and unscaling are exact), and an overflowing gradient skips that step on
// every rank, leaving the parameters as they were, at half the scale the step after.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cpu_ops_as_device.hpp"
#include "exec/play/interpreter.hpp"
#include "exec/play/loss_scale.hpp"
#include "loopback_ranks.hpp"
#include "plan/schedule.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using Decision = LossScaler::Decision;

TEST_CASE("loss scaler: an overflow skips the step and halves the scale, NaN as infinity") {
  LossScaler scaler({1024.0f, 3, 1.0f});
  CHECK(scaler.scale() == 1024.0f);
  CHECK(scaler.update(2.5) == Decision::apply);
  CHECK(scaler.update(std::numeric_limits<double>::infinity()) == Decision::skip);
  CHECK(scaler.scale() == 512.0f);
  CHECK(scaler.update(std::nan("")) == Decision::skip);
  CHECK(scaler.scale() == 256.0f);
  CHECK(scaler.skipped() == 2);
}

TEST_CASE("loss scaler: the scale doubles after its interval of applied steps in a row") {
  LossScaler scaler({8.0f, 3, 1.0f});
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.scale() == 8.0f);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.scale() == 16.0f);
  // An overflow restarts the count: three more applied steps before the next doubling.
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.update(INFINITY) == Decision::skip);
  CHECK(scaler.scale() == 8.0f);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.scale() == 8.0f);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.scale() == 16.0f);
}

TEST_CASE("loss scaler: an overflow at the smallest scale is divergence; bad settings refused") {
  LossScaler scaler({2.0f, 100, 1.0f});
  CHECK(scaler.update(INFINITY) == Decision::skip);
  CHECK(scaler.scale() == 1.0f);
  CHECK(scaler.update(INFINITY) == Decision::diverged);
  CHECK(scaler.scale() == 1.0f);
  CHECK(test::error_of([] {
          LossScaler({1000.0f, 10, 1.0f});
        }).find("powers of two") != std::string::npos);
  CHECK(test::error_of([] { LossScaler({4.0f, 10, 8.0f}); }).find("exceeds") != std::string::npos);
  CHECK(test::error_of([] {
          LossScaler({4.0f, 0, 1.0f});
        }).find("growth interval") != std::string::npos);
  CHECK(LossScaler().scale() == 65536.0f);  // PyTorch's GradScaler's initial scale
}

namespace {

constexpr int kBatch = 8, kSeq = 16, kSteps = 4;

struct RankRun {
  std::vector<float> losses, scales;
  std::vector<char> skipped;
  std::vector<std::vector<float>> params;  // after each step
};

struct Scaling {
  bool on = false;
  float initial = 1.0f;
  int overflow_call = -1;  // overflow_rank's cross-entropy backward that overflows
  int overflow_rank = 0;
};

void play_rank(const ModelSpec& model, const Schedule& schedule, int rank, Communicator& comm,
               bool device, const Scaling& scaling, RankRun& out) {
  const Plan& plan = schedule.plan;
  const RankCoord coord = rank_coord(plan, rank);
  auto ops = std::make_unique<CpuOpsAsDevice>(device, false);
  if (rank == scaling.overflow_rank) ops->overflow_call = scaling.overflow_call;
  Gpt2Stage stage(model, stage_blocks(model, plan).at(coord.pp), plan.tp, coord.tp,
                  schedule.microbatch, kSeq, plan.mb, std::move(ops));
  stage.load_full(init_full_parameters(model, 42));
  Interpreter interpreter(model, schedule, rank, stage, comm, AdamW{}, 1.0f);
  if (scaling.on) interpreter.set_loss_scaling({scaling.initial, 2000, 1.0f});
  for (int step = 0; step < kSteps; ++step) {
    auto feed = [&](int mb, std::span<int> tokens, std::span<int> targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = int((i * 7 + std::size_t(step * 3 + mb + coord.dp)) % 64);
        targets[i] = int((i * 7 + std::size_t(step * 3 + mb + coord.dp) + 1) % 64);
      }
    };
    const StepOutcome outcome = interpreter.play_step(step, 3e-3f, feed);
    out.losses.push_back(outcome.mean_loss);
    out.scales.push_back(outcome.loss_scale);
    out.skipped.push_back(outcome.skipped);
    interpreter.gather_parameters();
    const auto params = stage.params();
    out.params.emplace_back(params.begin(), params.end());
  }
}

std::vector<RankRun> run_plan(const std::string& plan_text, bool device, const Scaling& scaling) {
  const ModelSpec model = load_model("gpt2-nano");
  const Schedule schedule = compile(model, parse_plan(plan_text), kBatch, kSeq);
  std::vector<RankRun> runs(schedule.ranks.size());
  const std::vector<std::string> errors =
      test::run_loopback_ranks(schedule, device, [&](int rank, Communicator& comm) {
        play_rank(model, schedule, rank, comm, device, scaling, runs[std::size_t(rank)]);
      });
  for (const std::string& error : errors) REQUIRE(error == "");
  return runs;
}

}  // namespace

TEST_CASE("loss scaling on the CPU: a power-of-two scale trains to the same bits as none") {
  for (const std::string plan : {"dp=2", "pp=2,mb=2", "dp=2,zero=2,mb=2"})
    for (const bool device : {false, true}) {
      INFO(plan << (device ? " on the device path" : " on the host path"));
      const auto plain = run_plan(plan, device, {});
      const auto scaled = run_plan(plan, device, {true, 4096.0f});
      for (std::size_t r = 0; r < plain.size(); ++r) {
        CHECK(scaled[r].losses == plain[r].losses);
        CHECK(scaled[r].params == plain[r].params);
        CHECK(scaled[r].scales == std::vector<float>(kSteps, 4096.0f));
        CHECK(scaled[r].skipped == std::vector<char>(kSteps, 0));
        CHECK(plain[r].scales == std::vector<float>(kSteps, 0.0f));  // no scaling: none reported
      }
    }
}

TEST_CASE("loss scaling on the CPU: an overflow skips that step on every rank at half the scale") {
  // The head's rank: rank 0 under dp=2 (rank 1's replica stays finite), the last stage under pp.
  for (const auto& [plan_text, rank] : {std::pair<std::string, int>{"dp=2", 0}, {"pp=2,mb=2", 1}})
    for (const bool device : {false, true}) {
      // Named copies: clang refuses structured bindings inside INFO's capturing lambda.
      const std::string plan = plan_text;
      const int head_rank = rank;
      INFO(plan << (device ? " on the device path" : " on the host path"));
      const int mb = parse_plan(plan).mb;
      const auto plain = run_plan(plan, device, {true, 4096.0f});
      // The head's first backward of step 1 (calls count from 0, mb per step) overflows.
      const auto runs = run_plan(plan, device, {true, 4096.0f, mb, head_rank});
      for (std::size_t r = 0; r < runs.size(); ++r) {
        INFO("rank " << r);
        CHECK(runs[r].skipped == std::vector<char>{0, 1, 0, 0});
        CHECK(runs[r].scales == std::vector<float>{4096.0f, 4096.0f, 2048.0f, 2048.0f});
        CHECK(runs[r].losses[0] == plain[r].losses[0]);
        CHECK(runs[r].losses[1] == plain[r].losses[1]);  // the forward ran before the overflow
        CHECK(runs[r].params[1] == runs[r].params[0]);   // no update at the skipped step
        CHECK(runs[r].params[2] != runs[r].params[1]);
        for (float loss : runs[r].losses) CHECK(std::isfinite(loss));
      }
    }
}
