// SimGrid 3.32 accepts new platform zones only before the first simulation of the process: a
// slice arriving after a run is a clear error (see sim/slice_platform.hpp).
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

TEST_CASE("a slice of a new shape after the first simulation is a clear error") {
  build_test_platforms();
  const Catalog& c = shared_test_catalog();
  Simulator sim(test_slice(c, {1}, 2));
  Schedule s = empty_schedule(1);
  s.ranks[0].push_back(Forward{0, 0, 1, 1e9, 0, 0, 1});
  CHECK(sim.run(ModelSpec{"tiny", 2, 64, 2, 1024, 1000}, s).step_time_s > 0);
  CHECK_THROWS_WITH_AS(Simulator(test_slice(c, {3}, 3)), doctest::Contains("before the first run"),
                       Error);
}
