// A run record written by fabtrain-exec reads back through calibration's reader: the script
// tests/calibrate/record_roundtrip.sh trains gpt2-nano one rank (no mpirun) with
//   --plan dp=1,mb=2 --batch 4 --seq 32 --steps 2 --record FILE
// and runs this case with FABTRAIN_RUN_RECORD=FILE. Alone (no file given) it is skipped.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "calibrate/inputs.hpp"
#include "models/costs.hpp"
#include "plan/schedule.hpp"

using namespace fabtrain;

TEST_CASE("a run record written by fabtrain-exec train reads back through calibration's reader") {
  const char* path = std::getenv("FABTRAIN_RUN_RECORD");
  if (!path) {
    std::printf("SKIPPED: run by tests/calibrate/record_roundtrip.sh, which writes the record\n");
    return;
  }
  const calib::RunData run = calib::read_run_record(path);
  const ModelSpec nano = load_model("gpt2-nano");
  const Plan plan = parse_plan("dp=1,mb=2");
  CHECK(run.plan == to_string(plan));
  CHECK(run.world == 1);
  CHECK(run.batch == 4);
  CHECK(run.seq == 32);
  const ModelSpec model = calib::model_of(run.model_fields, run.model, path);
  CHECK(model.name == "gpt2-nano");
  CHECK(model.n_layer == nano.n_layer);
  CHECK(model.n_embd == nano.n_embd);
  CHECK(model.vocab_size == nano.vocab_size);
  REQUIRE(run.steps.size() == 2);
  const Schedule schedule = compile(nano, plan, 4, 32);
  std::map<std::string, int> expected;  // compute instructions of the step, by verb
  for (const Instruction& in : schedule.ranks[0]) {
    if (std::holds_alternative<Forward>(in)) ++expected["fwd"];
    if (std::holds_alternative<Backward>(in)) ++expected["bwd"];
    if (std::holds_alternative<OptimizerStep>(in)) ++expected["opt"];
  }
  for (const calib::StepSample& step : run.steps) {
    CHECK(step.wall_s > 0);
    std::map<std::string, int> kinds;
    int forward_blocks = 0;
    for (const calib::ComputeSample& c : step.compute) {
      ++kinds[c.kind];
      CHECK(c.duration_s > 0);
      CHECK(c.bytes > 0);
      if (c.kind == "fwd") {
        forward_blocks += c.blocks;
        CHECK(c.flops > 0);
      }
    }
    CHECK(kinds == expected);
    CHECK(forward_blocks == plan.mb * block_count(nano));  // every block, every microbatch
    // The gradient norm's all-reduce over the one rank: a collective call the fits can use.
    REQUIRE(step.collectives.size() == 1);
    CHECK(step.collectives[0].op == "all_reduce");
    CHECK(step.collectives[0].bytes == 8);
  }
}
