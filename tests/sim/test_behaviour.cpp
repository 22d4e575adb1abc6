// Monotonicity sweeps, determinism, memory (ZeRO's model-state formula, OOM flagging), the
// golden timeline of one small plan, calibration files and errors for bad input.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "models/model_spec.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/sim_report.hpp"
#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

namespace {

// A 2-stage pipeline across sites A and B, each stage a dp=2 pair inside one VM that all-reduces
// its gradients: exercises compute, p2p over the WAN and collectives.
Schedule mixed_schedule(int m) {
  Schedule s = pipeline_schedule(2, m, true, 5e10, 50e6);
  // ranks 0,1 = stage 0 and 1 of replica 0; add replica 1 as ranks 2,3 with renumbered peers
  Schedule out = empty_schedule(4, {0, 2, 1, 3});
  out.plan = s.plan;
  out.plan.dp = 2;
  out.plan.devices = {0, 2, 1, 3};
  out.global_batch = 2 * m;
  out.groups = {{0, 2}, {1, 3}};
  for (int replica = 0; replica < 2; ++replica)
    for (int stage = 0; stage < 2; ++stage) {
      auto stream = s.ranks[stage];
      for (auto& i : stream) {
        if (auto* x = std::get_if<Send>(&i)) x->peer = x->peer + 2 * replica;
        if (auto* x = std::get_if<Recv>(&i)) x->peer = x->peer + 2 * replica;
      }
      stream.push_back(Collective{CollectiveOp::all_reduce, Purpose::dp_gradients, stage, 400e6});
      stream.push_back(OptimizerStep{1e8, 1.6e9});
      out.ranks[stage + 2 * replica] = stream;
    }
  // rank order: 0 = (replica 0, stage 0), 1 = (replica 0, stage 1), 2, 3 = replica 1
  return out;
}

}  // namespace

TEST_CASE("more latency or less bandwidth never makes a step faster") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  Slice slice = test_slice(catalog, {1, 1}, 2, 0.001, 1e9);
  Simulator sim(slice);
  const auto s = mixed_schedule(4);
  double previous = 0;
  for (double rtt : {0.0, 0.001, 0.01, 0.05, 0.1, 0.2}) {
    override_wan_latency(sim.slice(), rtt);
    const double step = sim.run(tiny_model(), s).step_time_s;
    CAPTURE(rtt);
    CHECK(step >= previous * (1 - 1e-9));
    previous = step;
  }
  const double with_latency = previous;
  previous = 0;
  for (double bw : {100e9, 10e9, 1e9, 1e8, 1e7}) {
    sim.slice().networks.back().bandwidth = bw;
    const double step = sim.run(tiny_model(), s).step_time_s;
    CAPTURE(bw);
    CHECK(step >= previous * (1 - 1e-9));
    previous = step;
  }
  CHECK(with_latency > 0);
}

TEST_CASE("a faster GPU never makes a step slower") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const auto s = mixed_schedule(4);
  Simulator slow(test_slice(catalog, {1, 1}, 2, 0.01, 1e9, "GPU_TEST"));
  Simulator fast(test_slice(catalog, {1, 1}, 2, 0.01, 1e9, "GPU_FAST"));
  const auto a = slow.run(tiny_model(), s), b = fast.run(tiny_model(), s);
  CHECK(b.step_time_s <= a.step_time_s);
  CHECK(b.breakdown.compute_s < a.breakdown.compute_s);
}

TEST_CASE("more microbatches never increase the 1F1B bubble fraction") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  Simulator sim(test_slice(catalog, {4}, 1));
  double previous = 1;
  for (int m : {1, 2, 3, 4, 8, 16, 32}) {
    const auto r = sim.run(tiny_model(), pipeline_schedule(4, m, true, 5e10, 20e6));
    const double fraction = r.breakdown.bubble_s / r.step_time_s;
    CAPTURE(m);
    CHECK(fraction <= previous + 1e-9);
    previous = fraction;
  }
  CHECK(previous < 0.15);
}

TEST_CASE("the same inputs give byte-identical JSON, also from another Simulator") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const Slice slice = test_slice(catalog, {1, 1}, 2, 0.02, 1e9);
  const auto s = mixed_schedule(3);
  Simulator a(slice);
  const auto first = result_json(a.run(tiny_model(), s), s, tiny_model(), slice, 1e9).dump(2);
  // Something else in between, then again, and from a second simulator of the same slice.
  a.run(tiny_model(), pipeline_schedule(2, 5, false, 1e10, 1e6));
  const auto second = result_json(a.run(tiny_model(), s), s, tiny_model(), slice, 1e9).dump(2);
  Simulator b(slice);
  const auto third = result_json(b.run(tiny_model(), s), s, tiny_model(), slice, 1e9).dump(2);
  CHECK(first == second);
  CHECK(first == third);
  CHECK(first.find("\"time_to_train_s\"") != std::string::npos);
}

TEST_CASE("memory: static part is the ZeRO model-state formula per stage") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const Slice slice = test_slice(catalog, {2}, 4);
  const ModelSpec model = load_model("gpt2");
  const double P = double(model.parameters());
  for (Precision p : {Precision::fp32, Precision::fp16})
    for (int zero = 0; zero <= 3; ++zero) {
      Plan plan;
      plan.dp = 8;
      plan.zero = zero;
      plan.precision = p;
      const Schedule s = compile(model, plan, 8, 128);
      const auto m = estimate_memory(s, slice);
      const double e = p == Precision::fp32 ? 4 : 2, k = p == Precision::fp32 ? 8 : 12;
      double expected = e * P + e * P + k * P;  // (2+2+K)P under mixed precision
      if (zero >= 1) expected -= k * P * 7 / 8;
      if (zero >= 2) expected -= e * P * 7 / 8;
      if (zero >= 3) expected -= e * P * 7 / 8;
      CAPTURE(zero);
      CHECK(m.ranks[0].static_bytes == doctest::Approx(expected).epsilon(0.01));
      CHECK(m.ranks[0].framework_bytes == doctest::Approx(GiB));
      CHECK(m.ranks[0].activation_bytes > 0);
    }
}

TEST_CASE("memory: the framework profile's terms and NCCL's buffers per communicator and peer") {
  build_test_platforms();
  Catalog catalog = test_catalog();
  FrameworkMemory& framework = catalog.framework_memory.at(catalog.default_framework_memory);
  framework.context_bytes_by_gpu["GPU_FAST"] = 3 * GiB;
  framework.cublas_workspace_bytes = 8 * 1024 * 1024;
  framework.allocator_slack = 0.1;
  Slice slice = test_slice(catalog, {4}, 2);
  slice.communicator.device_buffer_channels = 2;
  slice.communicator.device_buffer_bytes = 4 * 1024 * 1024;
  const ModelSpec model = load_model("gpt2");
  Plan plan;
  plan.dp = 4;
  plan.pp = 2;
  plan.mb = 2;
  const Schedule s = compile(model, plan, 8, 128);
  const MemoryEstimate m = estimate_memory(s, slice);
  const RankMemory& r = m.ranks[0];
  CHECK(r.static_bytes == doctest::Approx(r.weights_bytes + r.gradient_bytes + r.optimizer_bytes));
  CHECK(r.gradient_bytes == doctest::Approx(r.weights_bytes));  // fp32, ZeRO-0
  CHECK(r.workspace_bytes == doctest::Approx(8 * 1024 * 1024));
  CHECK(r.slack_bytes == doctest::Approx(0.1 * r.allocated_bytes()));
  CHECK(r.context_bytes == doctest::Approx(GiB));  // GPU_TEST: the profile's default
  // The dp group of 4 (two ring neighbours), the tied-embedding pair (one), the world of 8
  // (two) and the next pipeline stage (one): 6 peers x 2 channels x 2 directions x 4 MiB.
  CHECK(communicator_buffer_bytes(s, 0, slice.communicator) ==
        doctest::Approx(6 * 2 * 2 * 4.0 * 1024 * 1024));
  CHECK(r.comm_buffer_bytes == communicator_buffer_bytes(s, 0, slice.communicator));
  CHECK(r.peak_bytes() == doctest::Approx(r.allocated_bytes() * 1.1 + GiB + r.comm_buffer_bytes));
  CHECK(r.framework_bytes ==
        doctest::Approx(r.workspace_bytes + r.slack_bytes + r.context_bytes + r.comm_buffer_bytes));
  // Open MPI's TCP path keeps no buffers on the GPU; another GPU type has its own context.
  slice.communicator.device_buffer_channels = 0;
  CHECK(estimate_memory(s, slice).ranks[0].comm_buffer_bytes == 0);
  const Slice fast = test_slice(catalog, {4}, 2, 0.02, 1e9, "GPU_FAST");
  CHECK(estimate_memory(s, fast).ranks[0].context_bytes == doctest::Approx(3 * GiB));
  // PyTorch DDP's buckets: a second copy of the gradients under data parallelism without ZeRO.
  framework.data_parallel_gradient_copy = true;
  CHECK(estimate_memory(s, slice).ranks[0].gradient_bytes == doctest::Approx(2 * r.gradient_bytes));
  CHECK(estimate_memory(s, slice).ranks[0].static_bytes ==
        doctest::Approx(r.static_bytes + r.gradient_bytes));
  plan.zero = 1;
  const Schedule zero1 = compile(model, plan, 8, 128);
  CHECK(estimate_memory(zero1, slice).ranks[0].gradient_bytes == doctest::Approx(r.gradient_bytes));
  framework.data_parallel_gradient_copy = false;
  // least_free_fraction and the terms a user reads.
  CHECK(least_free_fraction(m) ==
        doctest::Approx((r.capacity_bytes - r.peak_bytes()) / r.capacity_bytes));
  const std::string terms = memory_terms(r);
  for (const char* term : {"weights", "gradients", "optimizer", "activations at the peak",
                           "buffers in flight", "CUDA context", "allocator slack"})
    CHECK(terms.find(term) != std::string::npos);
}

TEST_CASE("memory: GPipe holds every microbatch, 1F1B the in-flight ones, too much is OOM") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const Slice slice = test_slice(catalog, {4}, 1);
  const double act = 2 * GiB;
  const auto gpipe = estimate_memory(pipeline_schedule(4, 8, false, 1e9, 1e6, act), slice);
  const auto ofob = estimate_memory(pipeline_schedule(4, 8, true, 1e9, 1e6, act), slice);
  CHECK(gpipe.ranks[0].activation_bytes == doctest::Approx(8 * act));
  CHECK(ofob.ranks[0].activation_bytes == doctest::Approx(4 * act));  // p - 0 in flight
  CHECK(ofob.ranks[3].activation_bytes == doctest::Approx(act));
  CHECK(gpipe.oom == false);

  Schedule big = pipeline_schedule(4, 8, false, 1e9, 1e6, act);
  big.static_bytes[2] = 10 * GiB;  // 10 + 16 activations + 1 framework > 24 GiB
  Simulator sim(slice);
  const auto r = sim.run(tiny_model(), big);
  CHECK(r.oom);
  CHECK(r.memory.worst_rank == 2);
  CHECK(r.memory.worst_excess == doctest::Approx(10 * GiB + 8 * act + GiB + 1e6 - 24 * GiB));
  CHECK(human_summary(r, big).find("OUT OF MEMORY: rank 2 (GPU_TEST at A)") != std::string::npos);
}

TEST_CASE("golden timeline of a small plan, simulated timestamps included") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const Slice slice = test_slice(catalog, {1, 1}, 2, 0.02, 1e9);
  Simulator sim(slice);
  const auto s = mixed_schedule(2);
  SimOptions options;
  options.trace = true;
  const auto r = sim.run(tiny_model(), s, options);
  const auto trace = chrome_trace_json(r, s);
  std::ostringstream text;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X")
      text << "rank " << e["pid"].get<int>() << " lane " << e["tid"].get<int>() << " "
           << fmt::format("{:.6f} {:.6f} ", e["ts"].get<double>() / 1e6,
                          (e["ts"].get<double>() + e["dur"].get<double>()) / 1e6)
           << e["name"].get<std::string>() << "\n";
  text << fmt::format("step {:.6f}\n", r.step_time_s);
  const std::string path = source_dir() + "/tests/sim/golden/mixed_2stage_dp2.timeline";
  if (std::getenv("FABTRAIN_UPDATE_GOLDEN")) std::ofstream(path) << text.str();
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(),
                  "missing golden file " << path << " (FABTRAIN_UPDATE_GOLDEN=1 writes it)");
  std::stringstream golden;
  golden << in.rdbuf();
  CHECK(text.str() == golden.str());
}

TEST_CASE("calibration overrides efficiencies and links, unknown keys are rejected") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  const std::string good = dir + "/fabtrain_sim_calibration.yaml";
  std::ofstream(good) << "compute:\n  GPU_TEST:\n    forward: {matmul_efficiency: 0.25}\n"
                         "links:\n  l2sts: {bandwidth: 5.0e8}\n";
  const Calibration cal = load_calibration(good, catalog);
  const Slice slice = test_slice(catalog, {1, 1}, 1, 0.0, 1e9);
  Simulator sim(slice);
  Schedule s = empty_schedule(2);
  s.ranks[0].push_back(Forward{0, 0, 1, 5e10, 0, 0, 1});
  s.ranks[0].push_back(Send{Tensor::activation, 0, 1, 1e8});
  s.ranks[1].push_back(Recv{Tensor::activation, 0, 0, 1e8});
  SimOptions options;
  options.calibration = &cal;
  CHECK(sim.run(tiny_model(), s).step_time_s == doctest::Approx(0.01 + 0.1).epsilon(0.01));
  CHECK(sim.run(tiny_model(), s, options).step_time_s == doctest::Approx(0.02 + 0.2).epsilon(0.01));

  const std::string bad = dir + "/fabtrain_sim_calibration_bad.yaml";
  std::ofstream(bad) << "compute:\n  GPU_TEST:\n    forward: {matmul_eff: 0.25}\n";
  CHECK_THROWS_WITH_AS(load_calibration(bad, catalog),
                       doctest::Contains("unknown key 'matmul_eff'"), Error);
  std::ofstream(bad) << "links:\n  l2sts: {bandwidth: -1}\n";
  CHECK_THROWS_AS(load_calibration(bad), Error);
  CHECK_THROWS_AS(load_calibration(dir + "/does-not-exist.yaml"), Error);
}

TEST_CASE("errors: plans needing more GPUs than the slice, bad peers, bad groups") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  Simulator sim(test_slice(catalog, {1}, 2));
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), empty_schedule(4)),
                       doctest::Contains("needs 4 GPUs but slice"), Error);
  Schedule s = empty_schedule(2);
  s.ranks[0].push_back(Send{Tensor::activation, 0, 5, 1});
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), s), doctest::Contains("peer 5"), Error);
  Schedule g = empty_schedule(2);
  g.ranks[0].push_back(Collective{CollectiveOp::all_reduce, Purpose::grad_norm, 3, 4});
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), g), doctest::Contains("group 3"), Error);
  Schedule bf16 = empty_schedule(1);
  bf16.plan.precision = Precision::bf16;
  bf16.ranks[0].push_back(Forward{0, 0, 1, 1e9, 0, 0, 1});
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), bf16), doctest::Contains("no bf16 peak"), Error);
  // A schedule that deadlocks (a receive nobody sends) is an error, and the next run is clean.
  Schedule dead = empty_schedule(2);
  dead.ranks[1].push_back(Recv{Tensor::activation, 0, 0, 1});
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), dead), doctest::Contains("deadlocked"), Error);
  // A wait without its start, or for another kind than its start, is refused by name before
  // the run.
  Schedule no_start = empty_schedule(2);
  no_start.ranks[0].push_back(Wait{7, Awaits::send, 1});
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), no_start),
                       doctest::Contains("wait without a start of request 7"), Error);
  Schedule wrong_kind = empty_schedule(2);
  Send started{Tensor::activation, 0, 1, 1e6};
  started.request = 0;
  wrong_kind.ranks[0] = {started, Wait{0, Awaits::collective, 1e6}};
  wrong_kind.ranks[1].push_back(Recv{Tensor::activation, 0, 0, 1e6});
  CHECK_THROWS_WITH_AS(sim.run(tiny_model(), wrong_kind), doctest::Contains("request 0 started as"),
                       Error);
  Schedule ok = empty_schedule(2);
  ok.ranks[0].push_back(Send{Tensor::activation, 0, 1, 1e6});
  ok.ranks[1].push_back(Recv{Tensor::activation, 0, 0, 1e6});
  CHECK(sim.run(tiny_model(), ok).step_time_s > 0);
}

TEST_CASE("memory: a layer rebuilt by recomputation adds to what is kept while its backward runs") {
  const double act = 1 * GiB, rebuilt = 0.25 * GiB;
  Forward f0{0, 0, 4}, f1{1, 0, 4};
  f0.activation_bytes = f1.activation_bytes = act;
  Backward b1{1, 0, 4}, b0{0, 0, 4};
  b1.activation_bytes = b0.activation_bytes = act;
  b1.rebuilt_bytes = b0.rebuilt_bytes = rebuilt;
  b1.recompute = b0.recompute = true;
  CHECK(peak_activation_bytes({f0, f1, b1, b0}) == doctest::Approx(2 * act + rebuilt));
  // The loss's gradients and a rebuilt layer come at different times of one backward.
  b1.logits_gradient_bytes = 0.5 * GiB;
  CHECK(peak_activation_bytes({f0, f1, b1, b0}, 1) == doctest::Approx(2 * act + 0.5 * GiB));
}
