// The step fit: collective corrections searched so that simulated steps match measured ones.
// The "measured" steps here are simulated with known corrections, so the fit can be checked
// against them; and a run without the fields it needs is refused by name.
#include <doctest/doctest.h>

#include <cmath>

#include "calibrate/fit_steps.hpp"
#include "models/model_spec.hpp"
#include "plan/plan.hpp"
#include "plan/schedule.hpp"
#include "sim/simulator.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using namespace fabtrain::calib;
using fabtrain::test::error_of;

namespace {

constexpr int kBatch = 8, kSeq = 64;

// A run record of `plan` whose every timed step took `step_s`.
RunData run_of(const ModelSpec& model, const std::string& plan, double step_s) {
  RunData run;
  run.path = "run-" + plan;
  run.plan = plan;
  run.model = model.name;
  run.model_fields = {{"name", model.name},     {"layers", model.n_layer},
                      {"hidden", model.n_embd}, {"heads", model.n_head},
                      {"context", model.n_ctx}, {"vocab", model.vocab_size}};
  run.batch = kBatch;
  run.seq = kSeq;
  run.world = 2;
  for (int i = 0; i < 3; ++i) {
    StepSample s;
    s.step = i;
    s.wall_s = i == 0 ? 10 * step_s : step_s;  // the first step warms up and is left out
    run.steps.push_back(s);
  }
  return run;
}

}  // namespace

TEST_CASE("the step fit finds corrections that reproduce steps simulated with known ones") {
  const Slice slice = load_slice("emulated-2site");
  const ModelSpec model = load_model("gpt2-nano");
  Calibration truth;
  truth.collectives[CollectiveOp::all_reduce] = {3.0, 0.6, 2e-3};
  truth.collectives[CollectiveOp::reduce_scatter] = {2.0, 1.2, 1e-3};
  truth.collectives[CollectiveOp::all_gather] = {1.5, 0.8, 5e-4};
  Simulator simulator(slice);
  SimOptions options;
  options.calibration = &truth;
  std::vector<RunData> runs;
  std::vector<double> rtts;
  for (double rtt : {0.0, 0.05})
    for (const std::string plan : {"dp=2", "dp=2,zero=2", "tp=2"}) {
      override_wan_latency(simulator.slice(), rtt);
      const double step =
          simulator.run(model, compile(model, parse_plan(plan), kBatch, kSeq), options).step_time_s;
      runs.push_back(run_of(model, plan, step));
      rtts.push_back(rtt);
    }
  std::vector<StepFitRun> fit_runs;
  for (std::size_t i = 0; i < runs.size(); ++i) fit_runs.push_back({&runs[i], rtts[i]});

  Calibration fitted;  // no corrections yet: the ring default
  const auto result = fit_collectives_to_steps(slice, fit_runs, fitted);
  REQUIRE(result.after_s.size() == runs.size());
  double worst_before = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    CAPTURE(result.labels[i]);
    CHECK(result.measured_s[i] == doctest::Approx(runs[i].steps[1].wall_s));
    CHECK(std::abs(result.after_s[i] / result.measured_s[i] - 1) < 0.03);
    worst_before = std::max(worst_before, std::abs(result.before_s[i] / result.measured_s[i] - 1));
  }
  CHECK(worst_before > 0.2);  // the default was far off: the fit did the work
  for (CollectiveOp op :
       {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather})
    CHECK(fitted.collectives.count(op) == 1);
  CHECK(fitted.collectives[CollectiveOp::all_reduce].latency_terms ==
        doctest::Approx(3.0).epsilon(0.15));
}

TEST_CASE("the step fit refuses a run whose header lacks batch, seq or model fields") {
  const Slice slice = load_slice("emulated-2site");
  RunData run = run_of(load_model("gpt2-nano"), "dp=2", 0.1);
  run.batch = 0;
  Calibration cal;
  const std::string message = error_of([&] {
    fit_collectives_to_steps(slice, {{&run, 0.0}}, cal);
  });
  CHECK(message.find("run-dp=2") != std::string::npos);
  CHECK(message.find("batch") != std::string::npos);
}
