// A calibration applied to a slice it does not cover says so: GPU types and link classes the
// catalog stands in for, corrections fitted on other hardware (CPUs over loopback applied to
// GPUs over a WAN), and a held-out error too large for the ranking to be trusted.
#include <doctest/doctest.h>

#include "calibrate/coverage.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using test::contains;

namespace {

bool any_warning(const std::vector<std::string>& warnings, const std::string& part) {
  for (const auto& w : warnings)
    if (contains(w, part)) return true;
  return false;
}

// What `fabtrain calibrate` writes from the emulated two-site CPU runs: CPU compute, the pcie
// class (ranks of one VM) and collective corrections.
Calibration cpu_loopback_calibration() {
  Calibration cal;
  cal.source = "cpu.yaml";
  cal.compute["CPU_HOST"][WorkKind::forward].matmul_efficiency = 0.5;
  cal.links["pcie"].latency_s = 2e-5;
  cal.collectives[CollectiveOp::all_reduce] = CollectiveCalibration{};
  return cal;
}

}  // namespace

TEST_CASE("a CPU calibration applied to a GPU slice over a WAN warns of each gap, by name") {
  const Slice gpu = load_slice("utah-amst");
  const auto w = calibration_warnings(cpu_loopback_calibration(), gpu);
  CHECK(any_warning(w, "cpu.yaml has no compute entries for GPU_RTX6000 (it has CPU_HOST)"));
  CHECK(any_warning(w, "were fitted with CPU_HOST, none of this slice's GPU_RTX6000"));
  CHECK(any_warning(w, "no link entries for l2sts"));
  CHECK_FALSE(any_warning(w, "held-out"));
}

TEST_CASE("a calibration that covers the slice says nothing; a large held-out error warns") {
  const Slice cpu = load_slice("emulated-2site");  // CPU_HOST, one l2sts network
  Calibration cal = cpu_loopback_calibration();
  cal.links["l2sts"].latency_s = 0.025;
  CHECK(calibration_warnings(cal, cpu).empty());
  cal.held_out_step_error = 0.19;
  CHECK(calibration_warnings(cal, cpu).empty());
  cal.held_out_step_error = 0.876;
  const auto w = calibration_warnings(cal, cpu);
  REQUIRE(w.size() == 1);
  CHECK(contains(w[0], "held-out step error is 87.6% (over 20%)"));
  CHECK(calibration_warnings(Calibration{}, cpu).empty());
}
