// ZeRO's shard in the backend's memory (exec/play/device_shard.hpp) and the interpreter's other
// device paths, on the CPU: every rank's stage runs on CPU operations that stand for a device
// (tests/exec/cpu_ops_as_device.hpp) and the loopback communicator takes that memory, so the
// shard's packing, collectives on device pointers, norm, clipping and AdamW run as they will on a
// GPU. Against the same plan on the host path: the same losses, final parameters and AdamW
// moments TO THE LAST BIT, for ZeRO 1-3 with and without overlap, small buckets and a
// pipeline whose stages share the tied embedding.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cpu_ops_as_device.hpp"
#include "exec/model/kernels_layout.hpp"
#include "exec/play/interpreter.hpp"
#include "loopback_ranks.hpp"
#include "plan/schedule.hpp"

using namespace fabtrain;

namespace {

constexpr int kBatch = 8, kSeq = 16, kSteps = 3;

struct RankRun {
  std::vector<float> losses, params, adam_m, adam_v;
  std::string error;
};

void play_rank(const ModelSpec& model, const Schedule& schedule, int rank, Communicator& comm,
               bool device, RankRun& out) {
  const Plan& plan = schedule.plan;
  const RankCoord coord = rank_coord(plan, rank);
  Gpt2Stage stage(model, stage_blocks(model, plan).at(coord.pp), plan.tp, coord.tp,
                  schedule.microbatch, kSeq, plan.mb,
                  std::make_unique<CpuOpsAsDevice>(device, false));
  stage.load_full(init_full_parameters(model, 42));
  Interpreter interpreter(model, schedule, rank, stage, comm, AdamW{}, 0.5f);
  for (int step = 0; step < kSteps; ++step) {
    auto feed = [&](int mb, std::span<int> tokens, std::span<int> targets) {
      for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = int((i * 5 + std::size_t(step * 3 + mb + coord.dp)) % 64);
        targets[i] = int((i * 5 + std::size_t(step * 3 + mb + coord.dp) + 1) % 64);
      }
    };
    out.losses.push_back(interpreter.play_step(step, 3e-3f, feed).mean_loss);
  }
  interpreter.gather_parameters();
  const auto params = stage.params();
  out.params.assign(params.begin(), params.end());
  out.adam_m = interpreter.adam_m();
  out.adam_v = interpreter.adam_v();
}

std::vector<RankRun> run_plan(const std::string& plan_text, bool device) {
  const ModelSpec model = load_model("gpt2-nano");
  const Schedule schedule = compile(model, parse_plan(plan_text), kBatch, kSeq);
  std::vector<RankRun> runs(schedule.ranks.size());
  const std::vector<std::string> errors =
      test::run_loopback_ranks(schedule, device, [&](int rank, Communicator& comm) {
        play_rank(model, schedule, rank, comm, device, runs[std::size_t(rank)]);
      });
  for (std::size_t r = 0; r < runs.size(); ++r) runs[r].error = errors[r];
  return runs;
}

void check_device_equals_host(const std::string& plan) {
  INFO("plan " << plan);
  const std::vector<RankRun> host = run_plan(plan, false), device = run_plan(plan, true);
  REQUIRE(host.size() == device.size());
  for (std::size_t r = 0; r < host.size(); ++r) {
    INFO("rank " << r);
    REQUIRE(host[r].error == "");
    REQUIRE(device[r].error == "");
    CHECK(device[r].losses == host[r].losses);
    CHECK(device[r].params == host[r].params);
    CHECK(device[r].adam_m == host[r].adam_m);
    CHECK(device[r].adam_v == host[r].adam_v);
  }
}

}  // namespace

TEST_CASE("device shard: dp=2 without ZeRO (the stage's device optimizer) equals the host's") {
  check_device_equals_host("dp=2");
}

TEST_CASE("device shard: ZeRO-1, -2 and -3 equal the host shard to the bit") {
  check_device_equals_host("dp=2,zero=1");
  check_device_equals_host("dp=2,zero=2,mb=2");
  check_device_equals_host("dp=2,zero=3,mb=2");
}

TEST_CASE("device shard: without overlap, and with small buckets, equal the host shard") {
  check_device_equals_host("dp=2,zero=1,overlap=off");
  check_device_equals_host("dp=2,zero=3,mb=2,bucket_mib=1");
}

TEST_CASE("device shard: a pipeline's stages sum the tied embedding on their shards") {
  check_device_equals_host("dp=2,pp=2,zero=1,mb=2");
  check_device_equals_host("dp=2,pp=2,zero=3,mb=2,overlap=off");
}
