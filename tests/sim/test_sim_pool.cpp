// SimPool: jobs run each in a process of their own, outcomes come back in the jobs' order, a
// job's error whole (the old pool cut it at 200 characters), a job whose process dies says how,
// and a job reads the parent's state as it stood when its process started.
#include <doctest/doctest.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "common/error.hpp"
#include "sim/sim_pool.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

TEST_CASE("sim pool: simulations come back in the jobs' order and equal one played here") {
  build_test_platforms();
  const Slice slice = test_slice(shared_test_catalog(), {1}, 2);
  const Schedule schedules[] = {pipeline_schedule(2, 4, true, 1e12, 1e8),
                                pipeline_schedule(2, 8, false, 2e12, 1e8)};
  SimPool pool(slice, nullptr, 2);
  const auto outcomes = pool.run(
      {1, 0, 1}, [&](Simulator& sim, int j) { return sim.run(tiny_model(), schedules[j]); });
  REQUIRE(outcomes.size() == 3);
  Simulator here(slice);
  for (int k : {0, 1, 2}) {
    CAPTURE(k);
    CHECK(outcomes[k].ok);
    CHECK(outcomes[k].error.empty());
  }
  const double step0 = here.run(tiny_model(), schedules[0]).step_time_s;
  const double step1 = here.run(tiny_model(), schedules[1]).step_time_s;
  CHECK(step0 != doctest::Approx(step1));
  CHECK(outcomes[0].step_time_s == doctest::Approx(step1).epsilon(1e-9));
  CHECK(outcomes[1].step_time_s == doctest::Approx(step0).epsilon(1e-9));
  CHECK(outcomes[2].step_time_s == outcomes[0].step_time_s);
  CHECK(outcomes[1].tokens_per_s > 0);
}

TEST_CASE("sim pool: a job's error comes back whole, and a job whose process dies says how") {
  build_test_platforms();
  const Slice slice = test_slice(shared_test_catalog(), {1}, 2);
  SimPool pool(slice, nullptr, 3);
  // Long enough to cross the old 200-character cut and one 64 KiB read of the pipe.
  std::string long_error = "slice 'x': ";
  while (long_error.size() < 100000) long_error += "every character of this message must arrive; ";
  long_error += "the end";
  const auto outcomes = pool.run({0, 1, 2, 3}, [&](Simulator& sim, int j) -> SimResult {
    if (j == 0) fail("{}", long_error);
    if (j == 1) _exit(7);
    if (j == 2) std::raise(SIGKILL);
    SimResult r;
    r.step_time_s = 1.5;
    return r;
  });
  REQUIRE(outcomes.size() == 4);
  CHECK_FALSE(outcomes[0].ok);
  CHECK(outcomes[0].error.size() == long_error.size());
  CHECK(outcomes[0].error == long_error);
  CHECK_FALSE(outcomes[1].ok);
  CHECK(outcomes[1].error.find("exited with status 7") != std::string::npos);
  CHECK_FALSE(outcomes[2].ok);
  CHECK(outcomes[2].error.find("signal 9") != std::string::npos);
  CHECK(outcomes[3].ok);
  CHECK(outcomes[3].step_time_s == 1.5);
}

TEST_CASE("sim pool: a job reads the parent's state as it stood when the job started") {
  build_test_platforms();
  const Slice slice = test_slice(shared_test_catalog(), {1}, 2);
  SimPool pool(slice, nullptr, 1);
  double value = 1;
  const SimPool::Job job = [&](Simulator& sim, int j) {
    SimResult r;
    r.step_time_s = value + j;
    value = -1;  // in the job's process only
    return r;
  };
  auto first = pool.run({0, 10}, job);
  value = 100;
  auto second = pool.run({0}, job);
  CHECK(first[0].step_time_s == 1);
  CHECK(first[1].step_time_s == 11);
  CHECK(second[0].step_time_s == 100);
}
