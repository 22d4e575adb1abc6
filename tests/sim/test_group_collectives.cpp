// Collectives played as one call of concurrent flows per group (the default): window caps still
// bind, the call starts when its last member arrives, NCCL's tree is chosen for large groups with
// small buffers and not for large buffers, and members that disagree on a call are an error.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

namespace {

Schedule all_reduce_over_all(int n, double bytes) {
  Schedule s = empty_schedule(n);
  std::vector<int> ring;
  for (int r = 0; r < n; ++r) ring.push_back(r);
  s.groups.push_back(ring);
  for (int r = 0; r < n; ++r)
    s.ranks[r].push_back(Collective{CollectiveOp::all_reduce, Purpose::grad_norm, 0, bytes});
  return s;
}

}  // namespace

TEST_CASE("a group all-reduce over a window-limited wide-area path is capped per flow") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  catalog.link_classes["l2sts"].tcp_window_bytes = 4 * 1024 * 1024;
  const double rtt = 0.1;
  Simulator sim(test_slice(catalog, {1, 1}, 1, rtt, /*wan bw*/ 0));
  const double bytes = 100e6;
  const auto s = all_reduce_over_all(2, bytes);
  const double window = 4.0 * 1024 * 1024;
  // n=2: two ring steps of bytes/2 each way, i.e. one stream of `bytes` per direction, 2
  // latencies; its first window at the NICs' 10 GB/s, the rest at window / RTT.
  const double expected = 2 * (rtt / 2) + window / 10e9 + (bytes - window) / (window / rtt);
  for (auto mode : {CollectiveMode::fast, CollectiveMode::automatic, CollectiveMode::fast,
                    CollectiveMode::ring}) {
    SimOptions o;
    o.collectives = mode;
    CAPTURE(int(mode));
    CHECK(sim.run(tiny_model(), s, o).step_time_s == doctest::Approx(expected).epsilon(0.01));
  }
}

TEST_CASE("a group call starts when its last member arrives and releases all members together") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  const double alpha = 1e-4;
  catalog.link_classes["l2bridge"].latency_s = alpha;
  Simulator sim(test_slice(catalog, {4}, 1));
  const double bytes = 200e6;
  Schedule s = all_reduce_over_all(4, bytes);
  s.ranks[2].insert(s.ranks[2].begin(), Forward{0, 0, 1, 5e10, 0, 0, 1});  // 10 ms late
  const auto r = sim.run(tiny_model(), s);
  const double ring = 6 * alpha + 1.5 * bytes / 10e9;
  CHECK(r.step_time_s == doctest::Approx(0.01 + ring).epsilon(0.01));
  for (const auto& rank : r.ranks)
    CHECK(rank.finish_s == doctest::Approx(r.step_time_s).epsilon(1e-9));
  // The early ranks waited for rank 2 and for the call: exposed communication, no compute.
  CHECK(r.ranks[0].breakdown.exposed_comm_s == doctest::Approx(0.01 + ring).epsilon(0.01));
  CHECK(r.ranks[2].breakdown.compute_s == doctest::Approx(0.01).epsilon(1e-6));
}

TEST_CASE(
    "automatic mode plays a tree for small buffers over large groups, a ring for large ones") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  const double alpha = 1e-4;
  catalog.link_classes["l2bridge"].latency_s = alpha;
  Simulator sim(test_slice(catalog, {8}, 1));
  SimOptions automatic, fast;
  fast.collectives = CollectiveMode::fast;

  // 4 bytes over 8 ranks: the ring pays 2(n-1) = 14 latencies, a binary tree of depth 3 pays 6.
  const auto tiny = all_reduce_over_all(8, 4);
  CHECK(sim.run(tiny_model(), tiny, fast).step_time_s == doctest::Approx(14 * alpha).epsilon(0.01));
  CHECK(sim.run(tiny_model(), tiny, automatic).step_time_s ==
        doctest::Approx(6 * alpha).epsilon(0.01));

  // 200 MB: bandwidth dominates and the ring moves less per NIC; automatic keeps the ring.
  const double bytes = 200e6;
  const auto big = all_reduce_over_all(8, bytes);
  const double ring = 14 * alpha + 2.0 * 7 / 8 * bytes / 10e9;
  CHECK(sim.run(tiny_model(), big, automatic).step_time_s == doctest::Approx(ring).epsilon(0.01));
}

TEST_CASE("members that disagree on a group call are an error, and the next run is clean") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  Simulator sim(test_slice(catalog, {4}, 1));
  Schedule s = all_reduce_over_all(4, 1e6);
  std::get<Collective>(s.ranks[3][0]).op = CollectiveOp::all_gather;
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), s),
                       doctest::Contains("every member must make the same calls"), Error);
  // A member that never arrives: the others wait forever, which is a deadlock, not a hang.
  Schedule missing = all_reduce_over_all(4, 1e6);
  missing.ranks[1].insert(missing.ranks[1].begin(), Recv{Tensor::activation, 0, 0, 1});
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), missing), doctest::Contains("deadlocked"), Error);
  CHECK(sim.run(tiny_model(), all_reduce_over_all(4, 1e6)).step_time_s > 0);
}
