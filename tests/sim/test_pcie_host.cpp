// A VM whose GPUs reach each other through host memory (interconnect pcie-host: peer-to-peer
// disabled, NCCL's SHM transport): the PCIe path at the pcie-host class's efficiency.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

TEST_CASE("pcie-host: an all-reduce inside the VM runs at the class's fraction of the PCIe path") {
  Catalog catalog = test_catalog();
  catalog.link_classes["pcie-host"] = LinkClass{"pcie-host", 0, 0, 0.25, "test"};
  const Slice direct = test_slice(catalog, {1}, 2);
  Slice staged = direct;
  staged.name += "-host";
  staged.vms[0].interconnect = "pcie-host";
  // SimGrid takes new platforms only before the first simulation: both first
  Simulator a(direct);
  Simulator b(staged);
  Schedule s = empty_schedule(2);
  s.groups = {{0, 1}};
  for (auto& stream : s.ranks)
    stream.push_back(Collective{CollectiveOp::all_reduce, Purpose::dp_gradients, 0, 400e6});
  const double fast = a.run(tiny_model(), s).step_time_s;
  const double slow = b.run(tiny_model(), s).step_time_s;
  // a ring all-reduce of two moves the buffer once each way: 400 MB at 12 GB/s, then at 3 GB/s
  CHECK(fast == doctest::Approx(400e6 / 12e9).epsilon(0.1));
  CHECK(slow == doctest::Approx(400e6 / 3e9).epsilon(0.1));
}

TEST_CASE("pcie-host without the catalog's class is refused by name") {
  Catalog catalog = test_catalog();
  Slice staged = test_slice(catalog, {1}, 2);
  staged.name += "-no-class";
  staged.vms[0].interconnect = "pcie-host";
  CHECK_THROWS_WITH_AS(Simulator{staged}, doctest::Contains("link class pcie-host"), Error);
}
