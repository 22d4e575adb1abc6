// Overlap in the simulator: started transfers and collectives run while the rank
// computes, so dp=2 over a slow link is faster with overlap=on than off but never faster than its
// compute, its exposed communication is less than the communication in flight, and pipelines
// and ZeRO-3 with prefetch play through; the memory estimate counts buffers in flight.
#include <doctest/doctest.h>

#include "models/model_spec.hpp"
#include "plan/chrome_trace.hpp"
#include "plan/schedule.hpp"
#include "plan/timeline.hpp"
#include "platforms/catalog.hpp"
#include "sim/memory.hpp"
#include "sim/sim_report.hpp"
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

  // simulate's JSON and text show both.
  const Schedule schedule = compile(gpt2, parse_plan("dp=2"), 2, 1024);
  const nlohmann::json j = result_json(on, schedule, gpt2, sim.slice(), std::nullopt);
  CHECK(j["breakdown"]["communication_s"] == on.breakdown.communication_s);
  CHECK(j["breakdown"]["exposed_comm_s"] == on.breakdown.exposed_comm_s);
  const std::string text = human_summary(on, schedule, std::nullopt);
  CHECK(text.find("s in flight, ") != std::string::npos);
  CHECK(text.find("hidden behind compute") != std::string::npos);
}

TEST_CASE("a traced overlapped pipeline shows its transfers in flight and pairs them") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  Simulator sim(test_slice(catalog, {1, 1}, 1, 0.02, 1e9));
  const ModelSpec gpt2 = load_model("gpt2");
  const Schedule s = compile(gpt2, parse_plan("pp=2,mb=4"), 8, 256);
  SimOptions o;
  o.trace = true;
  const SimResult r = sim.run(gpt2, s, o);
  int receives_in_flight = 0, waits = 0;
  for (const auto& e : r.trace) {
    const Instruction& in = s.ranks[e.rank][e.instruction];
    if (e.lane == kSendsInFlightLane && std::holds_alternative<Recv>(in)) ++receives_in_flight;
    if (e.lane == kCommunicationLane && std::holds_alternative<Wait>(in)) ++waits;
    CHECK(e.end_s >= e.start_s);
  }
  CHECK(receives_in_flight == 2 * 4);  // each stage receives 4 tensors
  CHECK(waits > 0);
  const nlohmann::json trace = chrome_trace_json(r, s);
  int arrows = 0;
  for (const auto& ev : trace["traceEvents"]) arrows += ev["ph"] == "s";
  CHECK(arrows == 8);
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

TEST_CASE(
    "started collectives of one group: one after another, or together where the library "
    "progresses them together (Open MPI's libnbc)") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  // A 4 MiB window over 100 ms: 42 MB/s, so 1 MiB buckets (0.5 MiB a step) are latency-bound.
  const double rtt = 0.1, window = 4 << 20;
  Slice slice = test_slice(catalog, {1, 1}, 1, rtt, 1e9);
  slice.networks.back().tcp_window_bytes = window;
  const ModelSpec gpt2 = load_model("gpt2");
  const std::string plan = "dp=2,bucket_mib=1";
  slice.communicator.concurrent_collectives = false;
  Simulator one_by_one(slice);
  const double serial = simulate(one_by_one, gpt2, plan, 2, 64).step_time_s;
  slice.communicator.concurrent_collectives = true;
  Simulator together(slice);
  const SimResult concurrent = simulate(together, gpt2, plan, 2, 64);
  CAPTURE(serial);
  CAPTURE(concurrent.step_time_s);
  CHECK(concurrent.step_time_s < serial);
  CHECK(concurrent.step_time_s > concurrent.breakdown.compute_s);
  // Bandwidth-bound buckets (50 MiB: 1.2 s each at the window's rate) still take their turn on
  // the one connection, but under libnbc the next one's bytes follow the previous one's at once,
  // while that one still owes its ring's latency: each bucket but the last saves at most that
  // tail (one step's one-way 50 ms), and the bytes move at the window's rate (less a round trip
  // a transfer: its first window leaves at the line rate, sim/tcp_window.hpp).
  slice.communicator.concurrent_collectives = false;
  const std::string big = "dp=2,bucket_mib=50";
  const double big_serial = simulate(one_by_one, gpt2, big, 2, 64).step_time_s;
  const double big_together = simulate(together, gpt2, big, 2, 64).step_time_s;
  const Schedule big_schedule = compile(gpt2, parse_plan(big), 2, 64);
  int buckets = 0;
  double bucket_bytes = 0;
  for (const auto& in : big_schedule.ranks[0])
    if (auto c = std::get_if<Collective>(&in); c && c->request >= 0) {
      ++buckets;
      bucket_bytes += c->bytes;
    }
  CAPTURE(big_serial);
  CAPTURE(big_together);
  CAPTURE(buckets);
  REQUIRE(buckets > 2);
  CHECK(big_together < big_serial);
  CHECK(big_serial - big_together <= (buckets - 1) * (rtt / 2) * 1.01);
  CHECK(big_together > bucket_bytes / (window / rtt) - buckets * rtt);
  // The shipped profiles say which they are.
  CHECK(builtin_catalog().communicator("openmpi-tcp").concurrent_collectives);
  CHECK_FALSE(builtin_catalog().communicator("nccl-socket").concurrent_collectives);
}
