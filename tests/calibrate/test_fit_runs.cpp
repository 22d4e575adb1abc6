// Least-squares refinement from run records: known rooflines plus 2% noise are recovered.
#include <doctest/doctest.h>

#include <cmath>

#include "calibrate/fit_compute.hpp"
#include "synthetic.hpp"

using namespace fabtrain;

namespace {

calib::KindCalibration fit(const std::vector<calib::RunData>& runs, const GpuType& cpu,
                           std::vector<calib::LinearFit>* fits = nullptr) {
  return calib::fit_compute_from_runs(runs, cpu, {}, fits);
}

}  // namespace

TEST_CASE("run fit recovers per-kind matmul efficiency and per-block overhead") {
  const GpuType cpu = test::test_cpu();
  const test::TrueRoofline truth;
  const std::vector<calib::RunData> runs = {test::synthetic_run("a", 1, cpu, truth),
                                            test::synthetic_run("b", 2, cpu, truth)};
  std::vector<calib::LinearFit> fits;
  const auto cal = fit(runs, cpu, &fits);
  REQUIRE(cal.count(WorkKind::forward));
  REQUIRE(cal.count(WorkKind::backward));
  CHECK(*cal.at(WorkKind::forward).matmul_efficiency == doctest::Approx(0.3).epsilon(0.03));
  CHECK(*cal.at(WorkKind::backward).matmul_efficiency == doctest::Approx(0.2).epsilon(0.03));
  CHECK(*cal.at(WorkKind::forward).kernel_overhead_s == doctest::Approx(2e-4).epsilon(0.15));
  for (const auto& f : fits) CHECK(f.rms_relative < 0.03);
}

TEST_CASE("run fit recovers the optimizer's memory efficiency (memory-bound, no flops term)") {
  const GpuType cpu = test::test_cpu();
  test::TrueRoofline truth;
  truth.optimizer_memory_efficiency = 0.55;
  const auto cal = fit({test::synthetic_run("a", 3, cpu, truth)}, cpu);
  REQUIRE(cal.count(WorkKind::optimizer));
  CHECK(*cal.at(WorkKind::optimizer).memory_efficiency == doctest::Approx(0.55).epsilon(0.03));
}

TEST_CASE("the fitted memory term never overtakes a compute-bound fit in the roofline's max") {
  const GpuType cpu = test::test_cpu();
  const test::TrueRoofline truth;
  const auto runs = std::vector<calib::RunData>{test::synthetic_run("a", 4, cpu, truth)};
  const auto cal = fit(runs, cpu);
  for (const auto& step : runs[0].steps)
    for (const auto& c : step.compute) {
      if (c.kind == "opt") continue;
      const double predicted = calib::predict_seconds(c, cpu, cal);
      CHECK(predicted == doctest::Approx(c.duration_s).epsilon(0.05));
    }
}

TEST_CASE("prediction error is small in sample and held out, and large for a wrong calibration") {
  const GpuType cpu = test::test_cpu();
  const test::TrueRoofline truth;
  const auto a = test::synthetic_run("a", 5, cpu, truth),
             b = test::synthetic_run("b", 6, cpu, truth);
  const auto in = calib::prediction_error(a, cpu, fit({a, b}, cpu));
  CHECK(std::abs(in.predicted_step_s / in.measured_step_s - 1) < 0.03);
  const auto held = calib::prediction_error(a, cpu, fit({b}, cpu));
  CHECK(std::abs(held.predicted_step_s / held.measured_step_s - 1) < 0.05);
  REQUIRE(held.kinds.size() == 3);
  for (const auto& k : held.kinds) CHECK(std::abs(k.predicted_s / k.measured_s - 1) < 0.05);
  // Twice the true efficiency everywhere: compute predicted about half as long.
  calib::KindCalibration wrong;
  wrong[WorkKind::forward] = {0.6, 1.0, 2e-4};
  wrong[WorkKind::backward] = {0.4, 1.0, 2e-4};
  wrong[WorkKind::optimizer] = {1.0, 0.8, 0.0};
  const auto off = calib::prediction_error(a, cpu, wrong);
  CHECK(off.predicted_step_s < 0.75 * off.measured_step_s);
}

TEST_CASE("linear fit never returns a negative slope or overhead") {
  std::vector<calib::ComputeSample> samples;
  // Durations fall with flops: the unconstrained slope would be negative.
  for (int i = 1; i <= 5; ++i) samples.push_back({"fwd", 0, 1e8 * i, 0, 1, 1.0 / i});
  const auto f = calib::fit_linear(samples, true);
  CHECK(f.slope >= 0);
  CHECK(f.per_block_s >= 0);
  CHECK(f.samples == 5);
}
