// The calibration pipeline (calibrate/pipeline.hpp) as `fabtrain calibrate` runs it: from bench
// files on disk to the calibration it would write, equal to the fits it is made of, with what it
// printed; and bad flag combinations refused by the flag's name.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_doc.hpp"
#include "calibrate/fit_links.hpp"
#include "calibrate/inputs.hpp"
#include "calibrate/pipeline.hpp"
#include "platforms/catalog.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::error_of;

namespace {

// The pipeline's calibration and everything it printed.
struct Printed {
  calib::CalibrationOutcome outcome;
  std::string text;
};

Printed calibrate_printing(const calib::CalibrationRequest& request) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  REQUIRE(out != nullptr);
  Printed p;
  try {
    p.outcome = calib::run_calibration(request, out);
  } catch (...) {
    std::fclose(out);
    std::free(buffer);
    throw;
  }
  std::fclose(out);
  p.text.assign(buffer, size);
  std::free(buffer);
  return p;
}

}  // namespace

TEST_CASE("calibration pipeline: bench files in, the fits' calibration and its report out") {
  const test::TempDir dir("fabtrain-pipeline");
  const std::string near =
      dir.write("0ms.json", test::bench_doc(25e9, 10e9, {{0.0003, 110e6}}).dump());
  const std::string far =
      dir.write("25ms.json", test::bench_doc(25e9, 10e9, {{0.0503, 70e6}}).dump());
  calib::CalibrationRequest request;
  request.benches = {near, far};
  request.fit_collectives = true;
  const Printed p = calibrate_printing(request);
  const Calibration& cal = p.outcome.calibration;

  REQUIRE(cal.compute.count("CPU_HOST") == 1);
  const auto& forward = cal.compute.at("CPU_HOST").at(WorkKind::forward);
  REQUIRE(forward.matmul_efficiency.has_value());
  CHECK(*forward.matmul_efficiency > 0);
  CHECK(*forward.matmul_efficiency < 1);
  // The link is exactly what fit_link makes of the same benches (openmpi-tcp: one stream).
  const calib::LinkFit expected = calib::fit_link({calib::read_bench(near), calib::read_bench(far)},
                                                  builtin_catalog().link_class("l2sts"), 1, 0);
  REQUIRE(cal.links.count("l2sts") == 1);
  const LinkCalibration& link = cal.links.at("l2sts");
  CHECK(*link.latency_s == doctest::Approx(*expected.link.latency_s));
  CHECK(*link.latency_s == doctest::Approx(0.00015));
  CHECK(*link.bandwidth == doctest::Approx(110e6));
  REQUIRE(link.tcp_window_bytes.has_value());
  CHECK(*link.tcp_window_bytes == doctest::Approx(70e6 * 0.0503));
  CHECK(p.outcome.comments.back() == "bench " + far);

  for (const char* section : {"compute from bench", "link l2sts:", "collectives ("})
    CHECK_MESSAGE(p.text.find(section) != std::string::npos, section);
  CHECK(p.text.find("compute from bench") < p.text.find("link l2sts:"));
}

TEST_CASE("calibration pipeline: --keep-compute leaves compute to the catalog") {
  const test::TempDir dir("fabtrain-pipeline");
  calib::CalibrationRequest request;
  request.benches = {dir.write("0ms.json", test::bench_doc(25e9, 10e9, {{0.0003, 110e6}}).dump())};
  request.keep_compute = true;
  const Printed p = calibrate_printing(request);
  CHECK(p.outcome.calibration.compute.empty());
  CHECK(p.outcome.calibration.links.count("l2sts") == 1);
  CHECK(p.text.find("--keep-compute") != std::string::npos);
}

TEST_CASE("calibration pipeline: bad flag combinations are refused by the flag's name") {
  const test::TempDir dir("fabtrain-pipeline");
  const std::string bench =
      dir.write("b.json", test::bench_doc(25e9, 10e9, {{0.0003, 110e6}}).dump());
  calib::CalibrationRequest none;
  CHECK(error_of([&] { calib::run_calibration(none, stdout); }).find("--bench") !=
        std::string::npos);
  calib::CalibrationRequest rtts;
  rtts.benches = {bench};
  rtts.bench_path_rtt_ms = {0, 100};
  CHECK(error_of([&] {
          calib::run_calibration(rtts, stdout);
        }).find("--bench-path-rtt-ms has 2 values for 1") != std::string::npos);
  calib::CalibrationRequest run_rtts;
  run_rtts.benches = {bench};
  run_rtts.run_path_rtt_ms = {0};
  CHECK(error_of([&] {
          calib::run_calibration(run_rtts, stdout);
        }).find("--run-path-rtt-ms has 1 values for 0") != std::string::npos);
  calib::CalibrationRequest steps;
  steps.benches = {bench};
  steps.fit_steps_slice = "emulated-2site";
  CHECK(error_of([&] { calib::run_calibration(steps, stdout); }).find("--fit-steps needs --runs") !=
        std::string::npos);
  calib::CalibrationRequest device;
  device.benches = {bench};
  device.device_type = "GPU_NOPE";
  CHECK(error_of([&] { calib::run_calibration(device, stdout); }).find("GPU_NOPE") !=
        std::string::npos);
}
