// Instruction times from marks on a backend's queue (exec/play/instruction_marks.hpp): the
// arithmetic, its refusals, and the interpreter timing a stage whose backend has marks from them
// (the CUDA backend's events; here CPU operations with a counting clock in their place), with
// the same losses as the host-timed stage.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "cpu_ops_as_device.hpp"
#include "exec/comm/loopback_communicator.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/play/instruction_marks.hpp"
#include "exec/play/interpreter.hpp"
#include "plan/schedule.hpp"

using namespace fabtrain;

TEST_CASE("instruction marks: instruction i runs from mark i to mark i+1, from mark 0") {
  const std::vector<double> marks = {0.0, 0.5, 0.5, 2.0};
  const auto t = timings_from_marks(marks, 3);
  REQUIRE(t.size() == 3);
  CHECK(t[0].start_s == 0.0);
  CHECK(t[0].duration_s == 0.5);
  CHECK(t[1].start_s == 0.5);
  CHECK(t[1].duration_s == 0.0);
  CHECK(t[2].start_s == 0.5);
  CHECK(t[2].duration_s == 1.5);
}

TEST_CASE("instruction marks: a missing, non-finite or backward mark is refused by its index") {
  CHECK_THROWS_WITH_AS(timings_from_marks(std::vector<double>{0.0, 1.0}, 2),
                       doctest::Contains("2 marks for 2 instructions"), Error);
  CHECK_THROWS_WITH_AS(
      timings_from_marks(std::vector<double>{0.0, std::numeric_limits<double>::quiet_NaN()}, 1),
      doctest::Contains("mark 1 is nan"), Error);
  CHECK_THROWS_WITH_AS(timings_from_marks(std::vector<double>{0.0, 2.0, 1.0}, 2),
                       doctest::Contains("mark 2 (1 s) precedes mark 1"), Error);
}

namespace {

float first_loss(Stage& stage, const ModelSpec& model, const Schedule& schedule,
                 StepOutcome* outcome) {
  LoopbackHub hub(1);
  LoopbackCommunicator comm(hub, 0);
  comm.set_groups(schedule.groups);
  stage.load_full(init_full_parameters(model, 42));
  Interpreter interpreter(model, schedule, 0, stage, comm, AdamW{}, 1.0f);
  auto feed = [](int mb, std::span<int> tokens, std::span<int> targets) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = int((i * 7 + mb) % 64);
      targets[i] = int((i * 7 + mb + 1) % 64);
    }
  };
  interpreter.play_step(0, 1e-3f, feed);
  *outcome = interpreter.play_step(1, 1e-3f, feed);
  return outcome->mean_loss;
}

}  // namespace

TEST_CASE("a stage with marks is timed from them, once per step, and trains the same") {
  const ModelSpec model = load_model("gpt2-nano");
  const Schedule schedule = compile(model, parse_plan("dp=1,mb=2"), 4, 16);
  const BlockRange all{0, block_count(model)};
  auto ops = std::make_unique<CpuOpsAsDevice>(false, true);
  CpuOpsAsDevice& marking = *ops;
  Gpt2Stage marked(model, all, 1, 0, schedule.microbatch, 16, 2, std::move(ops));
  Gpt2Stage plain(model, all, 1, 0, schedule.microbatch, 16, 2);
  StepOutcome with_marks, without;
  CHECK(first_loss(marked, model, schedule, &with_marks) ==
        first_loss(plain, model, schedule, &without));
  const std::size_t n = schedule.ranks[0].size();
  MESSAGE("synchronized ", marking.synchronized, " times in 2 steps of ", n, " instructions");
  CHECK(marking.synchronized <= 2);  // once after each step, not after each instruction
  // Two steps, each: mark 0, then one after every instruction, in order.
  REQUIRE(marking.recorded.size() == 2 * (n + 1));
  for (std::size_t k = 0; k <= n; ++k) CHECK(marking.recorded[n + 1 + k] == int(k));
  REQUIRE(with_marks.timings.size() == n);
  for (std::size_t i = 0; i < n; ++i) {  // the second step's clock: 1 ms per mark
    CHECK(with_marks.timings[i].start_s == doctest::Approx(1e-3 * double(i)));
    CHECK(with_marks.timings[i].duration_s == doctest::Approx(1e-3));
  }
}
