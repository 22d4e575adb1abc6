// NCCL's protocols under a communicator that lists them: a small all-reduce is charged LL's
// latency (its call and per-step latencies, not Simple's), a large one Simple's full bandwidth
// (not LL's half); a profile without protocols plays the plain alpha-beta ring as before.
#include <doctest/doctest.h>

#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

namespace {

Schedule all_reduce_of(int n, double bytes) {
  Schedule s = empty_schedule(n);
  std::vector<int> ring;
  for (int r = 0; r < n; ++r) ring.push_back(r);
  s.groups.push_back(ring);
  for (int r = 0; r < n; ++r)
    s.ranks[r].push_back(Collective{CollectiveOp::all_reduce, Purpose::dp_gradients, 0, bytes});
  return s;
}

// As the catalog's nccl-socket: LL and Simple with NCCL's tuner latencies.
const CollectiveProtocol kLL{"LL", 6.6e-6, 1.0e-6, 2.7e-6, 0.5};
const CollectiveProtocol kSimple{"Simple", 8.4e-6, 5.7e-6, 14.0e-6, 1.0};

}  // namespace

TEST_CASE(
    "a small all-reduce under NCCL's protocols pays LL's latency, a large one Simple's rate") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  const double alpha = 1e-6;
  catalog.link_classes["l2bridge"].latency_s = alpha;
  Slice slice = test_slice(catalog, {4}, 1);  // 4 VMs of one GPU: every ring hop is the network
  SimOptions fast;
  fast.collectives = CollectiveMode::fast;
  const int steps = 6;    // 2(n-1)
  const double B = 10e9;  // NIC_TEST

  Simulator plain(slice);
  slice.communicator.protocols = {kLL, kSimple};
  Simulator nccl(slice);

  // 64 bytes: LL's call latency and its network step latency on top of the hops'.
  const auto small = all_reduce_of(4, 64);
  const double ll = kLL.call_latency_s + steps * (alpha + kLL.step_latency_net_s);
  const double simple = kSimple.call_latency_s + steps * (alpha + kSimple.step_latency_net_s);
  const double small_s = nccl.run(tiny_model(), small, fast).step_time_s;
  CHECK(small_s == doctest::Approx(ll).epsilon(0.02));
  CHECK(small_s < 0.5 * simple);
  CHECK(plain.run(tiny_model(), small, fast).step_time_s ==
        doctest::Approx(steps * alpha).epsilon(0.02));

  // 400 MB: Simple's full bandwidth; LL would take twice the transfer.
  const double bytes = 400e6;
  const auto large = all_reduce_of(4, bytes);
  const double transfer = steps * (bytes / 4) / B;
  const double large_s = nccl.run(tiny_model(), large, fast).step_time_s;
  CHECK(large_s == doctest::Approx(transfer + simple).epsilon(0.001));
  CHECK(large_s < 0.6 * (2 * transfer));
  CHECK(plain.run(tiny_model(), large, fast).step_time_s ==
        doctest::Approx(transfer + steps * alpha).epsilon(0.001));
}

TEST_CASE("under NCCL's protocols the tree is still chosen for a tiny buffer over many ranks") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  const double alpha = 1e-5;
  catalog.link_classes["l2bridge"].latency_s = alpha;
  Slice slice = test_slice(catalog, {8}, 1);
  slice.communicator.protocols = {kLL, kSimple};
  Simulator sim(slice);
  // 8 ranks: the ring pays 14 steps, a binary tree of depth 3 pays 6, both under LL.
  const double ring = kLL.call_latency_s + 14 * (alpha + kLL.step_latency_net_s);
  const double t = sim.run(tiny_model(), all_reduce_of(8, 4), SimOptions{}).step_time_s;
  CHECK(t < ring);
  CHECK(t ==
        doctest::Approx(kLL.call_latency_s + 6 * alpha + 6 * kLL.step_latency_net_s).epsilon(0.05));
}
