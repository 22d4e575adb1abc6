// The 16-bit operand scratch of bf16 and fp16 products (exec/model/half_operands.hpp): one
// product's operand spans by hand, a stage's scratch as the largest operands over the products
// its plan's stream really runs (recorded on the CPU over the loopback communicator, pipeline,
// tensor-parallel and recomputing plans), and the device memory check counting it under a 16-bit
// plan only. tests/exec_cuda checks the spans against the CUDA products' own arrays on a GPU.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cpu_ops_as_device.hpp"
#include "exec/model/half_operands.hpp"
#include "exec/play/interpreter.hpp"
#include "exec/run/host_memory.hpp"
#include "loopback_ranks.hpp"
#include "plan/schedule.hpp"

using namespace fabtrain;

TEST_CASE("16-bit operands: a linear layer's and an attention's largest operands by hand") {
  // n=4 rows, 3 -> 5: the first operands are in (4x3), dout (4x5) twice; the second w (5x3)
  // twice and in (4x3).
  const OperandSpans linear = linear_operand_spans(4, 3, 5);
  CHECK(linear.first == 20);
  CHECK(linear.second == 15);
  // t=4 tokens, 2 heads of 3 in qkv rows of 18: a head's Q spans from its first element to its
  // last row's: (2-1)*3 + (4-1)*18 + 3 = 60 elements; the scores 2 heads x 4 x 4 = 32; dY 4 x 6.
  const OperandSpans attention = attention_operand_spans(4, 2, 3);
  CHECK(attention.first == 60);
  CHECK(attention.second == 60);
  CHECK(attention.bytes() == 2.0 * 120);
  CHECK(operand_span(true, 4, 4, 4, 16, 2) == 32);
}

namespace {

constexpr int kBatch = 8, kSeq = 16;

// The largest operands each rank's ops ran over one training step of the plan.
std::vector<OperandSpans> recorded_spans(const ModelSpec& model, const Schedule& schedule) {
  std::vector<OperandSpans> spans(schedule.ranks.size());
  const std::vector<std::string> errors =
      test::run_loopback_ranks(schedule, false, [&](int rank, Communicator& comm) {
        const Plan& plan = schedule.plan;
        const RankCoord coord = rank_coord(plan, rank);
        auto owned = std::make_unique<CpuOpsAsDevice>(false, false);
        CpuOpsAsDevice* ops = owned.get();
        Gpt2Stage stage(model, stage_blocks(model, plan).at(coord.pp), plan.tp, coord.tp,
                        schedule.microbatch, kSeq, plan.mb, std::move(owned));
        stage.load_full(init_full_parameters(model, 42));
        Interpreter interpreter(model, schedule, rank, stage, comm, AdamW{}, 1.0f);
        interpreter.play_step(0, 1e-3f, [](int, std::span<int> tokens, std::span<int> targets) {
          for (std::size_t i = 0; i < tokens.size(); ++i) {
            tokens[i] = int(i % 64);
            targets[i] = int((i + 1) % 64);
          }
        });
        spans[std::size_t(rank)] = ops->products;
      });
  for (const std::string& error : errors) REQUIRE(error == "");
  return spans;
}

}  // namespace

TEST_CASE("16-bit operands: a stage's scratch is the largest operands its step's products use") {
  const ModelSpec model = load_model("gpt2-nano");
  for (const std::string plan_text :
       {"dp=1", "pp=2,mb=2", "tp=2", "dp=1,recompute=on,mb=2", "pp=2,layers=1:1,mb=4"}) {
    INFO(plan_text);
    const Schedule schedule = compile(model, parse_plan(plan_text), kBatch, kSeq);
    const std::vector<OperandSpans> recorded = recorded_spans(model, schedule);
    for (std::size_t r = 0; r < recorded.size(); ++r) {
      INFO("rank " << r);
      const int stage = rank_coord(schedule.plan, int(r)).pp;
      const OperandSpans estimate =
          stage_operand_spans(model, schedule.plan, stage, schedule.microbatch, kSeq);
      CHECK(recorded[r].first > 0);
      CHECK(estimate.first == recorded[r].first);
      CHECK(estimate.second == recorded[r].second);
    }
  }
}

TEST_CASE("16-bit operands: the device check counts them under bf16 and fp16 plans only") {
  // GPT-2 medium, 8 x 1024 tokens in one microbatch: the largest operands are the head's,
  // dlogits (8192 x 50304) and the tied wte (50304 x 1024), about 0.9 GB as 16-bit copies.
  const ModelSpec medium = load_model("gpt2-medium");
  const double head = 2.0 * (8192.0 * 50304 + 50304.0 * 1024);
  const StageMemory fp32 = stage_memory(medium, parse_plan("dp=1"), 0, 8, 1024);
  CHECK(fp32.half_operands == 0);
  CHECK(stage_memory(medium, parse_plan("dp=1,precision=tf32"), 0, 8, 1024).half_operands == 0);
  for (const char* plan : {"dp=1,precision=bf16", "dp=1,precision=fp16"}) {
    INFO(plan);
    const StageMemory half = stage_memory(medium, parse_plan(plan), 0, 8, 1024);
    CHECK(half.half_operands == head);
    CHECK(device_need_bytes(half) == device_need_bytes(fp32) + head);
    CHECK(host_need_bytes(half, false) == host_need_bytes(fp32, false));  // never on the host
  }
  // Without the head, a stage's largest operands, first and second, are the MLP's 8192 x 4096
  // hidden and its gradient.
  const StageMemory first = stage_memory(medium, parse_plan("pp=2,precision=bf16"), 0, 8, 1024);
  CHECK(first.half_operands == 2.0 * (8192.0 * 4096 + 8192.0 * 4096));
}
