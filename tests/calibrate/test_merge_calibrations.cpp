// Calibrations fitted on different GPU types merge into one file the simulator reads per type;
// an entry two files give differently is refused naming it and both files.
#include <doctest/doctest.h>

#include "calibrate/merge_calibrations.hpp"
#include "sim/cost/calibration_file.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using test::contains;
using test::error_of;

namespace {

// A fit on one GPU type's VMs: its compute, the link class its ranks measured, a held-out error.
Calibration fit_on(const std::string& gpu, double matmul, const std::string& source) {
  Calibration cal;
  cal.compute[gpu][WorkKind::forward] = {matmul, 0.7, 1e-5};
  cal.compute[gpu][WorkKind::backward] = {matmul * 0.9, std::nullopt, std::nullopt};
  cal.links["l2bridge"] = {2e-5, 1.1e9, 0.0};
  cal.held_out_step_error = gpu == "GPU_A30" ? 0.05 : 0.12;
  cal.source = source;
  return cal;
}

}  // namespace

TEST_CASE("calibrate merge: two GPU types in one file, each applied to its own type") {
  const Calibration a30 = fit_on("GPU_A30", 0.6, "a30.yaml");
  Calibration rtx = fit_on("GPU_RTX6000", 0.45, "rtx.yaml");
  rtx.links["l2sts"] = {0.03, 1.2e8, 4194304.0};
  rtx.collectives[CollectiveOp::all_reduce] = {2.4, 0.75, 8.9e-4};
  const Calibration merged = calib::merge_calibrations({a30, rtx});
  REQUIRE(merged.compute.size() == 2);
  const ComputeDefaults defaults;
  CHECK(compute_parameters(defaults, merged, "GPU_A30", WorkKind::forward).matmul_efficiency ==
        0.6);
  CHECK(compute_parameters(defaults, merged, "GPU_RTX6000", WorkKind::forward).matmul_efficiency ==
        0.45);
  CHECK(merged.links.size() == 2);  // the identical l2bridge entry once, l2sts from rtx
  CHECK(merged.collectives.count(CollectiveOp::all_reduce) == 1);
  REQUIRE(merged.held_out_step_error);
  CHECK(*merged.held_out_step_error == 0.12);  // the worse fit's
  CHECK(merged.source == "a30.yaml + rtx.yaml");

  // Written and read back by the simulator's loader: both types survive.
  const test::TempDir dir("fabtrain-merge");
  const std::string path = (dir.path() / "merged.yaml").string();
  write_calibration(merged, calib::merge_comments({a30, rtx}), path);
  const Calibration back = load_calibration(path);
  CHECK(back.compute.at("GPU_A30").at(WorkKind::backward).matmul_efficiency == 0.6 * 0.9);
  CHECK(back.compute.at("GPU_RTX6000").at(WorkKind::forward).memory_efficiency == 0.7);
  CHECK(contains(test::text_of(path), "from rtx.yaml: GPU_RTX6000, l2bridge, l2sts"));
}

TEST_CASE("calibrate merge: conflicting entries are refused by name with both files") {
  const Calibration a = fit_on("GPU_A30", 0.6, "a.yaml");
  const Calibration b = fit_on("GPU_A30", 0.55, "b.yaml");
  const std::string e = error_of([&] { calib::merge_calibrations({a, b}); });
  CHECK(contains(e, "compute.GPU_A30.forward differs between a.yaml and b.yaml"));

  Calibration link = fit_on("GPU_RTX6000", 0.45, "c.yaml");
  link.links["l2bridge"].bandwidth = 9e8;
  CHECK(contains(error_of([&] {
                   calib::merge_calibrations({a, link});
                 }),
                 "links.l2bridge differs between a.yaml and c.yaml"));

  Calibration p2p_a = a, p2p_b = fit_on("GPU_RTX6000", 0.45, "d.yaml");
  p2p_a.p2p = P2pCalibration{1.3, 2e-5};
  p2p_b.p2p = P2pCalibration{1.5, 2e-5};
  CHECK(contains(error_of([&] {
                   calib::merge_calibrations({p2p_a, p2p_b});
                 }),
                 "p2p differs between a.yaml and d.yaml"));
  p2p_b.p2p = p2p_a.p2p;  // the same correction in both is no conflict
  CHECK(calib::merge_calibrations({p2p_a, p2p_b}).p2p->latency_terms == 1.3);
}
