// Analytic cases the simulator must reproduce within 1%: a point-to-point transfer, a ring
// all-reduce (ring and fast mode), a window-limited wide-area flow, and the GPipe/1F1B bubble
// with zero-cost communication.
#include <doctest/doctest.h>

#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

namespace {}  // namespace

TEST_CASE("a point-to-point transfer takes latency + bytes / bandwidth") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  Slice slice = test_slice(catalog, {1, 1}, 2, /*rtt*/ 0.02, /*wan bw*/ 1e9);
  slice.networks.back().tcp_window_bytes = 0;  // not window-limited: pure alpha-beta
  Simulator sim(slice);
  Schedule s = empty_schedule(2, {0, 2});  // GPU 0 at site A, GPU 2 at site B
  const double bytes = 100e6;
  s.ranks[0].push_back(Send{Tensor::activation, 0, 1, bytes});
  s.ranks[1].push_back(Recv{Tensor::activation, 0, 0, bytes});
  const auto r = sim.run(tiny_model(), s);
  const double expected = 0.02 / 2 + bytes / 1e9;  // the WAN is the bottleneck
  CHECK(r.step_time_s == doctest::Approx(expected).epsilon(0.01));
  CHECK(r.breakdown.exposed_comm_s == doctest::Approx(expected).epsilon(0.01));

  // Inside one VM the transfer crosses only two PCIe links (12 GB/s), never the NIC.
  Schedule local = empty_schedule(2, {0, 1});
  local.ranks[0].push_back(Send{Tensor::activation, 0, 1, bytes});
  local.ranks[1].push_back(Recv{Tensor::activation, 0, 0, bytes});
  CHECK(sim.run(tiny_model(), local).step_time_s == doctest::Approx(bytes / 12e9).epsilon(0.01));
}

TEST_CASE("a ring all-reduce takes 2(n-1) alpha + 2(n-1)/n S/B, in ring and fast mode") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  const double alpha = 1e-4;
  catalog.link_classes["l2bridge"].latency_s = alpha;  // one switch hop per VM-to-VM step
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    const Slice slice = test_slice(catalog, {n}, 1);
    Simulator sim(slice);
    Schedule s = empty_schedule(n);
    std::vector<int> ring;
    for (int r = 0; r < n; ++r) ring.push_back(r);
    s.groups.push_back(ring);
    const double bytes = 200e6;
    for (int r = 0; r < n; ++r)
      s.ranks[r].push_back(Collective{CollectiveOp::all_reduce, Purpose::dp_gradients, 0, bytes});
    const double expected = 2 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes / 10e9;  // NIC-bound
    SimOptions ring_mode;
    ring_mode.collectives = CollectiveMode::ring;
    SimOptions fast_mode;
    fast_mode.collectives = CollectiveMode::fast;
    CHECK(sim.run(tiny_model(), s, ring_mode).step_time_s ==
          doctest::Approx(expected).epsilon(0.01));
    CHECK(sim.run(tiny_model(), s, fast_mode).step_time_s ==
          doctest::Approx(expected).epsilon(0.01));

    // Reduce-scatter: n-1 steps of S/n.
    for (int r = 0; r < n; ++r)
      std::get<Collective>(s.ranks[r][0]).op = CollectiveOp::reduce_scatter;
    const double rs = (n - 1) * alpha + double(n - 1) / n * bytes / 10e9;
    CHECK(sim.run(tiny_model(), s, ring_mode).step_time_s == doctest::Approx(rs).epsilon(0.01));
  }
}

TEST_CASE(
    "a long flow over a 100 ms l2sts path is limited to window / RTT after its first window") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  const double window = 4.0 * 1024 * 1024;
  catalog.link_classes["l2sts"].tcp_window_bytes = window;
  const Slice slice = test_slice(catalog, {1, 1}, 1, /*rtt*/ 0.1, /*wan bw*/ 0 /*unlimited*/);
  Simulator sim(slice);
  Schedule s = empty_schedule(2);
  const double bytes = 100e6;
  s.ranks[0].push_back(Send{Tensor::activation, 0, 1, bytes});
  s.ranks[1].push_back(Recv{Tensor::activation, 0, 0, bytes});
  const double rate = window / 0.1;  // ~42 MB/s
  // The first window leaves in one flight (the 10 GB/s NICs: 0.4 ms), the rest at window / RTT.
  const auto r = sim.run(tiny_model(), s);
  CHECK(r.step_time_s ==
        doctest::Approx(0.05 + window / 10e9 + (bytes - window) / rate).epsilon(0.01));
  CHECK(r.step_time_s > 2.0);  // the 10 GB/s NICs alone would take 10 ms

  // A communicator with four streams per peer: four times the window.
  Slice four_streams = slice;
  four_streams.communicator.streams_per_peer = 4;
  Simulator four(four_streams);
  CHECK(
      four.run(tiny_model(), s).step_time_s ==
      doctest::Approx(0.05 + 4 * window / 10e9 + (bytes - 4 * window) / (4 * rate)).epsilon(0.01));
}

TEST_CASE("a flow within one TCP window crosses a long path at line rate, not window / RTT") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  catalog.link_classes["l2sts"].tcp_window_bytes = 4.0 * 1024 * 1024;
  Simulator sim(test_slice(catalog, {1, 1}, 1, /*rtt*/ 0.1, /*wan bw*/ 0));
  Schedule s = empty_schedule(2);
  const double bytes = 3e6;  // under the 4 MiB window
  s.ranks[0].push_back(Send{Tensor::activation, 0, 1, bytes});
  s.ranks[1].push_back(Recv{Tensor::activation, 0, 0, bytes});
  const double step = sim.run(tiny_model(), s).step_time_s;
  CHECK(step == doctest::Approx(0.05 + bytes / 10e9).epsilon(0.01));
  CHECK(step < 0.05 + bytes / (4.0 * 1024 * 1024 / 0.1));  // a flat window / RTT cap: +71 ms
}

TEST_CASE(
    "pipeline step with zero-cost communication is (m+p-1) stage times, bubble (p-1)/(m+p-1)") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const Slice slice = test_slice(catalog, {8}, 1);  // no latency, 10 GB/s NICs, zero-byte transfers
  Simulator sim(slice);
  const double fwd_flops = 5e10;          // 10 ms at 5e12 effective FLOP/s
  const double stage_time = 0.01 + 0.02;  // forward + backward
  for (bool one_f_one_b : {false, true})
    for (int p : {2, 4, 8})
      for (int m : {1, 4, 16}) {
        CAPTURE(one_f_one_b);
        CAPTURE(p);
        CAPTURE(m);
        const auto s = pipeline_schedule(p, m, one_f_one_b, fwd_flops, 0);
        const auto r = sim.run(tiny_model(), s);
        const double step = (m + p - 1) * stage_time;
        CHECK(r.step_time_s == doctest::Approx(step).epsilon(0.01));
        CHECK(r.breakdown.bubble_s == doctest::Approx(step * (p - 1) / (m + p - 1)).epsilon(0.01));
        CHECK(r.breakdown.compute_s == doctest::Approx(m * stage_time).epsilon(0.01));
        CHECK(r.breakdown.compute_s + r.breakdown.bubble_s + r.breakdown.exposed_comm_s ==
              doctest::Approx(r.step_time_s).epsilon(1e-6));
      }
}
