// A started reduce-scatter under a communicator whose started reduce-scatter goes via the group's
// root (CommunicatorProfile::started_reduce_scatter_via_root: Open MPI's libnbc): binomial reduce
// rounds of the whole buffer, then a scatter of the parts from member 0; the next call of the
// group reduces while this one scatters; a two-rank call with a correction costs the correction's
// formula; blocking calls keep the ring.
#include <doctest/doctest.h>

#include "sim/simulator.hpp"
#include "sim/tcp_window.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

namespace {

// `calls` reduce-scatters of `bytes` over ranks 0..n-1, started one after another and then
// waited for (started), or blocking.
Schedule reduce_scatters(int n, double bytes, int calls, bool started) {
  Schedule s = empty_schedule(n);
  std::vector<int> group;
  for (int r = 0; r < n; ++r) group.push_back(r);
  s.groups.push_back(group);
  for (int r = 0; r < n; ++r) {
    for (int k = 0; k < calls; ++k)
      s.ranks[r].push_back(Collective{CollectiveOp::reduce_scatter, Purpose::zero_gradients, 0,
                                      bytes, -1, -1, started ? k : -1});
    if (started)
      for (int k = 0; k < calls; ++k)
        s.ranks[r].push_back(Wait{k, Awaits::collective, bytes, CollectiveOp::reduce_scatter,
                                  Purpose::zero_gradients});
  }
  return s;
}

}  // namespace

TEST_CASE("a started reduce-scatter via the root: reduce rounds, then the scatter, then the next") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  // Two sites of one VM with two GPUs each (ranks 0, 1 at A; 2, 3 at B); the path between them
  // is window-limited: 4 MiB over 100 ms.
  const double rtt = 0.1, window = 4 << 20, line = 1e9, pcie = 12e9;
  Slice slice = test_slice(catalog, {1, 1}, 2, rtt, line);
  slice.networks.back().tcp_window_bytes = window;
  slice.communicator.concurrent_collectives = true;
  slice.communicator.started_reduce_scatter_via_root = true;
  Simulator sim(slice);
  const double bytes = 40 << 20;
  auto across = [&](double b) { return rtt / 2 + window_limited_seconds(b, window, rtt, line); };
  // Round 1 inside the VMs (1 -> 0, 3 -> 2), round 2 across (2 -> 0, the whole buffer), then the
  // scatter: a quarter to each member, two of them across at once.
  const double reduce = bytes / pcie + across(bytes);
  const double one = reduce + across(bytes / 4);
  CHECK(sim.run(tiny_model(), reduce_scatters(4, bytes, 1, true)).step_time_s ==
        doctest::Approx(one).epsilon(0.02));
  // The second call's reduce (towards 0) runs while the first one scatters (away from 0).
  const double two = sim.run(tiny_model(), reduce_scatters(4, bytes, 2, true)).step_time_s;
  CAPTURE(two);
  CHECK(two == doctest::Approx(2 * reduce + across(bytes / 4)).epsilon(0.02));
  CHECK(two < 2 * one - 0.5 * across(bytes / 4));
  // Where started calls run one after another (NCCL's stream) the second waits for the whole first.
  slice.communicator.concurrent_collectives = false;
  Simulator serial(slice);
  CHECK(serial.run(tiny_model(), reduce_scatters(4, bytes, 2, true)).step_time_s ==
        doctest::Approx(2 * one).epsilon(0.02));
  // A blocking reduce-scatter (Open MPI's tuned ring) keeps the ring: three steps of a quarter,
  // the crossing flows 3/4 of the buffer, each paying its step's latency.
  const double ring = 3 * (rtt / 2) + window_limited_seconds(0.75 * bytes, window, rtt, line);
  CHECK(sim.run(tiny_model(), reduce_scatters(4, bytes, 1, false)).step_time_s ==
        doctest::Approx(ring).epsilon(0.02));
  // Without the profile's word, a started call is the ring too.
  slice.communicator.started_reduce_scatter_via_root = false;
  Simulator ring_started(slice);
  CHECK(ring_started.run(tiny_model(), reduce_scatters(4, bytes, 1, true)).step_time_s ==
        doctest::Approx(ring).epsilon(0.02));
}

TEST_CASE("a corrected two-rank reduce-scatter via the root costs the correction's formula") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const double rtt = 0.02, line = 1e9;
  Slice slice = test_slice(catalog, {1, 1}, 1, rtt, line);
  slice.communicator.started_reduce_scatter_via_root = true;
  Simulator sim(slice);
  Calibration cal;
  cal.collectives[CollectiveOp::reduce_scatter] = {3, 1.44, 1e-3};
  SimOptions o;
  o.calibration = &cal;
  const double bytes = 64e6;
  const double formula = 1e-3 + 3 * (rtt / 2) + 1.44 * bytes / line;
  const double started = sim.run(tiny_model(), reduce_scatters(2, bytes, 1, true), o).step_time_s;
  CHECK(started == doctest::Approx(formula).epsilon(0.01));
  // The ring shape plays the same formula at two ranks: the fit of either is the other's.
  CHECK(sim.run(tiny_model(), reduce_scatters(2, bytes, 1, false), o).step_time_s ==
        doctest::Approx(started).epsilon(0.01));
}
