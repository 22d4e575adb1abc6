// The optimizer on the device: a CUDA stage keeps its parameters, gradients and AdamW moments on
// the GPU and the interpreter runs the step there (scaling, the gradient norm's sum of squares,
// clipping, AdamW). Against the CPU stage (the host optimizer, the reference) over the same
// steps: losses, gradient norms and final parameters within fp32 round-off; and the moments
// written back after a round trip through the host (checkpoints) give the same next step.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../exec/relative_difference.hpp"
#include "exec/comm/loopback_communicator.hpp"
#include "exec/cuda/cuda_check.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "exec/model/cuda/cuda_ops.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/play/interpreter.hpp"
#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "require_gpu.hpp"

using namespace fabtrain;

namespace {

using test::require_gpu;

constexpr int kBatch = 8, kSeq = 32;

void feed(int step, int mb, int microbatch, std::span<int> tokens, std::span<int> targets) {
  for (int q = 0; q < microbatch; ++q)
    for (int p = 0; p < kSeq; ++p) {
      const int s = step * kBatch + mb * microbatch + q;
      tokens[q * kSeq + p] = (s * 7 + p) % 64;
      targets[q * kSeq + p] = (s * 7 + p + 1) % 64;
    }
}

struct Run {
  std::vector<float> losses, norms, params;
  std::vector<long long> allocations, frees;  // device_allocations() after each step
};

// steps of gpt2-nano under plan on one rank; the moments go through the host after resume_at.
// precision: the CUDA products'.
Run train(bool on_gpu, const std::string& plan_text, int steps, int resume_at,
          cuda::MatmulPrecision precision = cuda::MatmulPrecision::fp32) {
  const ModelSpec model = load_model("gpt2-nano");
  const Schedule schedule = compile(model, parse_plan(plan_text), kBatch, kSeq);
  LoopbackHub hub(1);
  LoopbackCommunicator comm(hub, 0);
  comm.set_groups(schedule.groups);
  Gpt2Stage stage(model, BlockRange{0, block_count(model)}, 1, 0, schedule.microbatch, kSeq,
                  schedule.plan.mb, on_gpu ? cuda::make_cuda_ops({precision}) : nullptr);
  stage.load_full(init_full_parameters(model, 42));
  CHECK(stage.device_optimizer() == on_gpu);
  Interpreter interpreter(model, schedule, 0, stage, comm, AdamW{}, 1.0f);
  Run run;
  for (int step = 0; step < steps; ++step) {
    if (step == resume_at) {  // a checkpoint's round trip: read the moments, write them back
      std::vector<float> m = interpreter.adam_m(), v = interpreter.adam_v();
      interpreter.adam_m() = m;
      interpreter.adam_v() = v;
      interpreter.parameters_changed();
    }
    const StepOutcome out = interpreter.play_step(
        step, 3e-3f, [&](int mb, auto t, auto y) { feed(step, mb, schedule.microbatch, t, y); });
    run.losses.push_back(out.mean_loss);
    run.norms.push_back(out.grad_norm);
    run.allocations.push_back(cuda::device_allocations().allocations);
    run.frees.push_back(cuda::device_allocations().frees);
  }
  const auto p = stage.params();
  run.params.assign(p.begin(), p.end());
  return run;
}

}  // namespace

TEST_CASE("CUDA optimizer: parameters, norms and losses follow the host optimizer's") {
  require_gpu();
  for (const char* plan : {"dp=1", "dp=1,mb=2"}) {
    CAPTURE(plan);
    const Run cpu = train(false, plan, 6, -1);
    const Run gpu = train(true, plan, 6, -1);
    REQUIRE(gpu.losses.size() == cpu.losses.size());
    CHECK(test::relative_difference(gpu.losses, cpu.losses) < 1e-4);
    CHECK(test::relative_difference(gpu.norms, cpu.norms) < 1e-3);
    CHECK(test::relative_difference(gpu.params, cpu.params) < 1e-4);
  }
}

TEST_CASE("CUDA optimizer: the moments' round trip through the host changes nothing") {
  require_gpu();
  const Run straight = train(true, "dp=1", 4, -1);
  const Run round_trip = train(true, "dp=1", 4, 2);
  CHECK(round_trip.losses == straight.losses);  // bit for bit: the same state, the same kernels
  CHECK(round_trip.params == straight.params);
}

TEST_CASE("CUDA optimizer: a step after the first allocates and frees nothing on the device") {
  require_gpu();
  for (const auto precision : {cuda::MatmulPrecision::fp32, cuda::MatmulPrecision::fp16}) {
    CAPTURE(int(precision));
    const Run run = train(true, "dp=1,mb=2", 4, -1, precision);
    CHECK(run.allocations.back() == run.allocations.front());
    CHECK(run.frees.back() == run.frees.front());
  }
}
