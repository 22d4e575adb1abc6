// Overlap in the simulator (issue 13): started transfers and collectives run while the rank
// computes, so dp=2 over a slow link is faster with overlap=on than off but never faster than its
// compute, its exposed communication is less than the communication in flight, and pipelines
// and ZeRO-3 with prefetch play through; the memory estimate counts buffers in flight.
#include <doctest/doctest.h>

#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "sim/memory.hpp"
#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

namespace {

SimResult simulate(Simulator& sim, const ModelSpec& model, const std::string& plan, int batch,
                   int seq) {
  return sim.run(model, compile(model, parse_plan(plan), batch, seq));
}

}  // namespace

TEST_CASE("dp=2 over a slow link: overlap=on hides gradient buckets behind the backward") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  Simulator sim(test_slice(catalog, {1, 1}, 1, 0.02, 1e9));  // one GPU per site, 1 GB/s WAN
  const ModelSpec gpt2 = load_model("gpt2");
  const SimResult on = simulate(sim, gpt2, "dp=2", 2, 1024);
  const SimResult off = simulate(sim, gpt2, "dp=2,overlap=off", 2, 1024);
  CAPTURE(on.step_time_s);
  CAPTURE(off.step_time_s);
  CHECK(on.step_time_s < off.step_time_s);
  CHECK(on.step_time_s > on.breakdown.compute_s);
  CHECK(on.breakdown.compute_s == doctest::Approx(off.breakdown.compute_s).epsilon(0.02));
  // What was hidden: communication in flight exceeds what the rank waited for.
  CHECK(on.breakdown.exposed_comm_s < on.breakdown.communication_s);
  CHECK(off.breakdown.exposed_comm_s ==
        doctest::Approx(off.breakdown.communication_s).epsilon(0.02));
  CHECK(on.breakdown.communication_s > 0);
  // The split still adds up to the step.
  CHECK(on.breakdown.compute_s + on.breakdown.exposed_comm_s + on.breakdown.bubble_s ==
        doctest::Approx(on.step_time_s).epsilon(1e-6));
  // Same inputs, same numbers.
  CHECK(simulate(sim, gpt2, "dp=2", 2, 1024).step_time_s == on.step_time_s);
}

TEST_CASE("ZeRO-2, ZeRO-3 with prefetch and a pipeline play with overlap and are no slower") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  Simulator sim(test_slice(catalog, {1, 1}, 2, 0.02, 1e9));
  const ModelSpec gpt2 = load_model("gpt2");
  for (const char* plan : {"dp=2,zero=2,mb=2", "dp=2,zero=3,mb=2", "pp=2,mb=4", "dp=2,pp=2,mb=4",
                           "dp=2,tp=2,zero=1", "dp=4,zero=3"}) {
    CAPTURE(plan);
    const Plan p = parse_plan(plan);
    Plan off_plan = p;
    off_plan.overlap = false;
    const int batch = 2 * p.dp * p.mb;
    const SimResult on = sim.run(gpt2, compile(gpt2, p, batch, 512));
    const SimResult off = sim.run(gpt2, compile(gpt2, off_plan, batch, 512));
    CAPTURE(on.step_time_s);
    CAPTURE(off.step_time_s);
    CHECK(on.step_time_s <= off.step_time_s * (1 + 1e-6));
    CHECK(on.step_time_s >= on.breakdown.compute_s);
    CHECK(on.breakdown.exposed_comm_s <= on.breakdown.communication_s * (1 + 1e-6) + 1e-6);
  }
}

TEST_CASE("buffers in flight count in the memory estimate") {
  const Catalog catalog = test_catalog();
  const Slice slice = test_slice(catalog, {1, 1}, 1);
  const ModelSpec gpt2 = load_model("gpt2");
  // ZeRO-3: the next bucket's parameters are gathered while the current one's are in use.
  const Schedule on = compile(gpt2, parse_plan("dp=2,zero=3"), 2, 256);
  const Schedule off = compile(gpt2, parse_plan("dp=2,zero=3,overlap=off"), 2, 256);
  const double in_flight = estimate_memory(on, slice).ranks[0].buffer_bytes;
  const double one_at_a_time = estimate_memory(off, slice).ranks[0].buffer_bytes;
  CHECK(in_flight > one_at_a_time);
  // No starts: the largest single buffer, as before overlap.
  double largest = 0;
  for (const auto& in : off.ranks[0])
    if (auto c = std::get_if<Collective>(&in)) largest = std::max(largest, c->bytes);
  CHECK(one_at_a_time == largest);
}
