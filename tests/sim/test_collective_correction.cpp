// A calibration's per-op collective correction (sim/cost/calibration.hpp, collectives:): loaded
// with unknown keys and bad values rejected, played as latency_terms * alpha + bytes * factor / B
// in every collective mode, window caps still binding, and ops it does not name left on the ring.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

namespace {

Schedule one_call(CollectiveOp op, int n, double bytes) {
  Schedule s = empty_schedule(n);
  std::vector<int> ring;
  for (int r = 0; r < n; ++r) ring.push_back(r);
  s.groups.push_back(ring);
  for (int r = 0; r < n; ++r) s.ranks[r].push_back(Collective{op, Purpose::dp_gradients, 0, bytes});
  return s;
}

std::string write_temp(const char* name, const std::string& text) {
  const auto path =
      (std::filesystem::temp_directory_path() / (std::string("fabtrain-sim-") + name)).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("collective corrections load, and bad ones are errors naming the key") {
  const auto good =
      write_temp("coll-good.yaml",
                 "collectives:\n  all_reduce: {latency_terms: 2.4, bandwidth_factor: 0.5}\n"
                 "  all_gather: {latency_terms: 1, bandwidth_factor: 0}\n");
  const Calibration cal = load_calibration(good);
  REQUIRE(cal.collectives.size() == 2);
  CHECK(cal.collectives.at(CollectiveOp::all_reduce).latency_terms == 2.4);
  CHECK(cal.collectives.at(CollectiveOp::all_reduce).bandwidth_factor == 0.5);
  CHECK(cal.collectives.at(CollectiveOp::all_gather).bandwidth_factor == 0);
  CHECK_FALSE(cal.collectives.count(CollectiveOp::reduce_scatter));
  CHECK_FALSE(cal.empty());
  const auto unknown_op = write_temp(
      "coll-op.yaml", "collectives:\n  broadcast: {latency_terms: 2, bandwidth_factor: 1}\n");
  CHECK_THROWS_WITH_AS(load_calibration(unknown_op), doctest::Contains("unknown key 'broadcast'"),
                       Error);
  const auto unknown_key =
      write_temp("coll-key.yaml", "collectives:\n  all_reduce: {latency_terms: 2, alpha: 1}\n");
  CHECK_THROWS_WITH_AS(load_calibration(unknown_key), doctest::Contains("unknown key 'alpha'"),
                       Error);
  const auto half =
      write_temp("coll-half.yaml", "collectives:\n  all_reduce: {latency_terms: 2}\n");
  CHECK_THROWS_WITH_AS(load_calibration(half), doctest::Contains("needs both"), Error);
  const auto below = write_temp(
      "coll-below.yaml", "collectives:\n  all_reduce: {latency_terms: 0.5, bandwidth_factor: 1}\n");
  CHECK_THROWS_WITH_AS(load_calibration(below), doctest::Contains("latency_terms=0.5 out of range"),
                       Error);
  for (const auto& p : {good, unknown_op, unknown_key, half, below}) std::filesystem::remove(p);
}

TEST_CASE("a corrected collective costs latency_terms * alpha + bytes * factor / B in every mode") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  const double alpha = 1e-4;
  catalog.link_classes["l2bridge"].latency_s = alpha;
  Simulator sim(test_slice(catalog, {4}, 1));
  const double bytes = 200e6, bandwidth = 10e9;  // the test slice's switched bandwidth
  Calibration cal;
  cal.collectives[CollectiveOp::reduce_scatter] = {3.5, 1.5};
  const auto s = one_call(CollectiveOp::reduce_scatter, 4, bytes);
  // The correction is a two-rank call's: over 4 ranks 3 times the latency steps and 1.5 times
  // the bytes per member, as the ring grows.
  const double expected = 3.5 * 3 * alpha + bytes * 1.5 * 1.5 / bandwidth;
  // Without the correction, the ring: 3 latencies and 3/4 of the buffer per NIC.
  const double ring = 3 * alpha + 0.75 * bytes / bandwidth;
  CHECK(sim.run(tiny_model(), s).step_time_s == doctest::Approx(ring).epsilon(0.01));
  for (auto mode : {CollectiveMode::automatic, CollectiveMode::fast, CollectiveMode::ring}) {
    SimOptions o;
    o.calibration = &cal;
    o.collectives = mode;
    CAPTURE(int(mode));
    CHECK(sim.run(tiny_model(), s, o).step_time_s == doctest::Approx(expected).epsilon(0.01));
  }
  // Latency-bound: a 4-byte call pays the latency terms only.
  const auto tiny = one_call(CollectiveOp::reduce_scatter, 4, 4);
  SimOptions o;
  o.calibration = &cal;
  CHECK(sim.run(tiny_model(), tiny, o).step_time_s ==
        doctest::Approx(3.5 * 3 * alpha).epsilon(0.01));
  // An op it does not name keeps the ring.
  const auto gather = one_call(CollectiveOp::all_gather, 4, bytes);
  CHECK(sim.run(tiny_model(), gather, o).step_time_s == doctest::Approx(ring).epsilon(0.01));
}

TEST_CASE("a corrected collective over a window-limited path is still capped by the window") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  catalog.link_classes["l2sts"].tcp_window_bytes = 4 * 1024 * 1024;
  const double rtt = 0.1;
  Simulator sim(test_slice(catalog, {1, 1}, 1, rtt, 0));
  const double bytes = 50e6;
  const double window = 4.0 * 1024 * 1024;
  Calibration cal;
  cal.collectives[CollectiveOp::all_reduce] = {1.2, 0.5};  // OpenMPI-like: one exchange of half
  SimOptions o;
  o.calibration = &cal;
  // The flow of bytes * 0.5: its first window at the NICs' 10 GB/s, the rest at window / RTT.
  const double expected = 1.2 * (rtt / 2) + window / 10e9 + (bytes * 0.5 - window) / (window / rtt);
  CHECK(sim.run(tiny_model(), one_call(CollectiveOp::all_reduce, 2, bytes), o).step_time_s ==
        doctest::Approx(expected).epsilon(0.01));
}

TEST_CASE("a p2p correction delays each received message by its extra latency terms and overhead") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  catalog.link_classes["l2sts"].tcp_window_bytes = 0;  // line rate: the closed form stays simple
  const double rtt = 0.1, bytes = 1e6, nic = 10e9;
  Simulator sim(test_slice(catalog, {1, 1}, 1, rtt, 0));
  Schedule s = empty_schedule(2);
  s.ranks[0].push_back(Send{Tensor::activation, 0, 1, bytes});
  s.ranks[1].push_back(Recv{Tensor::activation, 0, 0, bytes});
  SimOptions o;
  const double plain = sim.run(tiny_model(), s, o).step_time_s;
  CHECK(plain == doctest::Approx(rtt / 2 + bytes / nic).epsilon(0.01));
  Calibration cal;
  cal.p2p = P2pCalibration{1.5, 2e-3};
  o.calibration = &cal;
  CHECK(sim.run(tiny_model(), s, o).step_time_s ==
        doctest::Approx(1.5 * rtt / 2 + 2e-3 + bytes / nic).epsilon(0.01));

  const auto bad = write_temp("p2p-below.yaml", "p2p: {latency_terms: 0.5}\n");
  const std::string message = error_of([&] { load_calibration(bad); });
  CHECK(message.find("p2p") != std::string::npos);
  CHECK(message.find("latency_terms") != std::string::npos);
}

TEST_CASE("a corrected collective of at most small_bytes pays small_latency_terms instead") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  catalog.link_classes["l2sts"].tcp_window_bytes = 0;
  const double rtt = 0.1;
  Simulator sim(test_slice(catalog, {1, 1}, 1, rtt, 0));
  Calibration cal;
  cal.collectives[CollectiveOp::all_reduce] = {2.5, 1.0, 0.0, 4096, 1.0};
  SimOptions o;
  o.calibration = &cal;
  CHECK(sim.run(tiny_model(), one_call(CollectiveOp::all_reduce, 2, 4), o).step_time_s ==
        doctest::Approx(1.0 * rtt / 2).epsilon(0.01));
  CHECK(sim.run(tiny_model(), one_call(CollectiveOp::all_reduce, 2, 8192), o).step_time_s ==
        doctest::Approx(2.5 * rtt / 2 + 8192 / 10e9).epsilon(0.01));
}
