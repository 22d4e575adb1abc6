// The calibration YAML this room writes reads back through the simulator's loader unchanged.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "sim/cost/calibration_file.hpp"

using namespace fabtrain;

namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("fabtrain-calib-") + name))
      .string();
}

}  // namespace

TEST_CASE("calibration YAML round trip through load_calibration") {
  Calibration cal;
  cal.compute["CPU_HOST"][WorkKind::forward] = {0.123456789012345, 0.7, 1.5e-5};
  cal.compute["CPU_HOST"][WorkKind::backward] = {0.1, std::nullopt, 0.0};
  cal.compute["CPU_HOST"][WorkKind::optimizer] = {std::nullopt, 0.45, std::nullopt};
  cal.compute["GPU_RTX6000"][WorkKind::forward] = {0.55, std::nullopt, std::nullopt};
  cal.links["l2sts"] = {0.000151, 1.1e8, 1.234567e6};
  cal.links["l2bridge"] = {2e-5, std::nullopt, 0.0};
  cal.collectives[CollectiveOp::all_reduce] = {2.4, 0.75, 8.9e-4};
  cal.p2p = P2pCalibration{1.33, 2e-5};
  const std::string path = temp_path("roundtrip.yaml");
  write_calibration(cal, {"test file", "second comment"}, path);
  const Calibration back = load_calibration(path);
  REQUIRE(back.compute.size() == 2);
  for (const auto& [device, kinds] : cal.compute) {
    REQUIRE(back.compute.count(device));
    for (const auto& [kind, c] : kinds) {
      const auto& b = back.compute.at(device).at(kind);
      CHECK(b.matmul_efficiency == c.matmul_efficiency);
      CHECK(b.memory_efficiency == c.memory_efficiency);
      CHECK(b.kernel_overhead_s == c.kernel_overhead_s);
    }
  }
  REQUIRE(back.links.size() == 2);
  for (const auto& [name, l] : cal.links) {
    const auto& b = back.links.at(name);
    CHECK(b.latency_s == l.latency_s);
    CHECK(b.bandwidth == l.bandwidth);
    CHECK(b.tcp_window_bytes == l.tcp_window_bytes);
  }
  REQUIRE(back.collectives.size() == 1);
  const auto& c = back.collectives.at(CollectiveOp::all_reduce);
  CHECK(c.latency_terms == 2.4);
  CHECK(c.bandwidth_factor == 0.75);
  CHECK(c.overhead_s == 8.9e-4);
  REQUIRE(back.p2p);
  CHECK(back.p2p->latency_terms == 1.33);
  CHECK(back.p2p->overhead_s == 2e-5);
  std::filesystem::remove(path);
}

TEST_CASE("an empty calibration writes a file that loads as empty, unwritable path is an error") {
  const std::string path = temp_path("empty.yaml");
  write_calibration(Calibration{}, {"nothing fitted"}, path);
  CHECK(load_calibration(path).empty());
  std::filesystem::remove(path);
  CHECK_THROWS_AS(write_calibration(Calibration{}, {}, "/nonexistent-dir/x/cal.yaml"), Error);
}

TEST_CASE(
    "the held-out step error calibrate measured is written and read back; out of range refused") {
  Calibration cal;
  cal.held_out_step_error = 0.083;
  const std::string path = temp_path("held-out.yaml");
  write_calibration(cal, {"held out"}, path);
  const Calibration back = load_calibration(path);
  REQUIRE(back.held_out_step_error);
  CHECK(*back.held_out_step_error == 0.083);
  CHECK(load_calibration(temp_path("held-out.yaml")).empty());  // an error bar, not a correction
  const std::string bad = temp_path("held-out-bad.yaml");
  std::ofstream(bad) << "held_out_step_error: -0.5\n";
  try {
    load_calibration(bad);
    FAIL("a negative error was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("held_out_step_error") != std::string::npos);
  }
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}
