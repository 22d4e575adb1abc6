// Calibration from a bench file alone: the efficiencies it implies, folded into the simulator's
// roofline, give back the bench's own rates.
#include <doctest/doctest.h>

#include "bench_doc.hpp"
#include "calibrate/fit_compute.hpp"
#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "synthetic.hpp"

using namespace fabtrain;

TEST_CASE("bench fit: the model's forward and backward take GEMM time plus element-wise time") {
  const GpuType cpu = test::test_cpu();  // 100 GFLOP/s, 20 GB/s
  const double gemm_rate = 25e9, memory_rate = 10e9;
  const auto bench = calib::parse_bench(test::bench_doc(gemm_rate, memory_rate), "synthetic.json");
  std::vector<std::string> notes;
  const auto cal = calib::fit_compute_from_bench(bench, cpu, notes);
  CHECK(*cal.at(WorkKind::forward).memory_efficiency == doctest::Approx(0.5));
  CHECK(*cal.at(WorkKind::optimizer).memory_efficiency == doctest::Approx(0.5));
  // Every instruction of gpt2-nano's step at B=4, T=64: predicted = flops/gemm + bytes/memory.
  const Schedule s = compile(load_model("gpt2-nano"), parse_plan("dp=1"), 4, 64);
  double flops = 0, bytes = 0, predicted = 0;
  for (const auto& in : s.ranks[0])
    if (const auto* f = std::get_if<Forward>(&in)) {
      flops += f->flops;
      bytes += f->bytes;
      predicted +=
          calib::predict_seconds({"fwd", 0, f->flops, f->bytes, f->end - f->begin, 0}, cpu, cal);
    }
  REQUIRE(flops > 0);
  CHECK(predicted == doctest::Approx(flops / gemm_rate + bytes / memory_rate).epsilon(1e-6));
  // The efficiency is below the bare GEMM's 25% because element-wise time is folded in.
  CHECK(*cal.at(WorkKind::forward).matmul_efficiency < 0.25);
  CHECK(*cal.at(WorkKind::forward).matmul_efficiency > 0.05);
}

TEST_CASE(
    "bench fit: a faster GEMM gives a proportionally higher efficiency when compute dominates") {
  const GpuType cpu = test::test_cpu();
  std::vector<std::string> notes;
  const auto slow = calib::fit_compute_from_bench(
      calib::parse_bench(test::bench_doc(5e9, 1e12), "slow.json"), cpu, notes);
  const auto fast = calib::fit_compute_from_bench(
      calib::parse_bench(test::bench_doc(10e9, 1e12), "fast.json"), cpu, notes);
  CHECK(*fast.at(WorkKind::backward).matmul_efficiency ==
        doctest::Approx(2 * *slow.at(WorkKind::backward).matmul_efficiency).epsilon(0.01));
  // Memory faster than the catalog: capped at 1 and said so.
  CHECK(*fast.at(WorkKind::forward).memory_efficiency == 1.0);
  bool said = false;
  for (const auto& n : notes) said |= n.find("capped") != std::string::npos;
  CHECK(said);
}
