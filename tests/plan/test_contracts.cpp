// The contracts plan/ owns for every other room: one verb per instruction kind, a collective's
// operation that follows from its purpose, one default batch, what the executor can run.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "plan/collective_pairing.hpp"
#include "plan/default_batch.hpp"
#include "plan/executor_support.hpp"
#include "plan/schedule.hpp"
#include "plan/symbolic_run.hpp"
#include "plan/verb.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

TEST_CASE("verb() is the first word of an instruction's line and its JSON op") {
  const ModelSpec m = load_model("gpt2-nano");
  std::set<std::string> seen;
  for (const char* text : {"dp=2,zero=2,mb=2", "tp=2,pp=2,mb=2", "dp=2,zero=1"}) {
    const Schedule s = compile(m, parse_plan(text), 8, 16);
    for (const auto& stream : s.ranks)
      for (const Instruction& in : stream) {
        const std::string line = to_string(in);
        CHECK(line.substr(0, line.find(' ')) == verb(in));
        nlohmann::json j;
        to_json(j, in);
        CHECK(j["op"] == verb(in));
        CHECK(is_communication_verb(verb(in)) == is_communication(in));
        seen.insert(verb(in));
      }
  }
  CHECK(seen == std::set<std::string>{"load", "fwd", "bwd", "send", "recv", "all_reduce",
                                      "reduce_scatter", "all_gather", "opt", "wait"});
  CHECK(canonical_verb("optimizer") == "opt");  // older run records
  CHECK(canonical_verb("fwd") == "fwd");
  CHECK_FALSE(is_communication_verb("optimizer"));
  CHECK(test::error_of([] { is_communication_verb("fwdd"); }) ==
        "'fwdd' is not an instruction's verb");
}

TEST_CASE("compiled collectives pair operation and purpose; symbolic_run refuses a bad pair") {
  const ModelSpec m = load_model("gpt2-nano");
  for (const char* text : {"dp=2,zero=1", "dp=2,zero=2,mb=2", "dp=2,zero=3", "tp=2,pp=2,mb=2"}) {
    CAPTURE(text);
    const Schedule s = compile(m, parse_plan(text), 8, 16);
    for (const auto& stream : s.ranks)
      for (const Instruction& in : stream)
        if (const auto* c = std::get_if<Collective>(&in)) CHECK_FALSE(pairing_error(*c));
  }
  CHECK(op_for(Purpose::zero_gradients) == CollectiveOp::reduce_scatter);
  CHECK(op_for(Purpose::zero_parameters) == CollectiveOp::all_gather);
  CHECK(op_for(Purpose::dp_gradients) == CollectiveOp::all_reduce);

  Schedule bad = compile(m, parse_plan("dp=2,zero=2"), 8, 16);
  REQUIRE(symbolic_run(bad).ok);
  int changed = 0;
  for (auto& stream : bad.ranks)
    for (Instruction& in : stream)
      if (auto* c = std::get_if<Collective>(&in); c && c->purpose == Purpose::zero_gradients) {
        c->op = CollectiveOp::all_gather;  // the same on every member: only the pairing is wrong
        ++changed;
      }
  REQUIRE(changed > 0);
  const SymbolicRun run = symbolic_run(bad);
  CHECK_FALSE(run.ok);
  CHECK(run.message.find("purpose zero_gradients needs op reduce_scatter, not all_gather") !=
        std::string::npos);
}

TEST_CASE("the default batch is 8 per GPU, rounded up to a multiple of dp*mb") {
  CHECK(default_global_batch(parse_plan("dp=2,mb=3")) == 18);  // 16 does not divide by 6
  CHECK(default_global_batch(parse_plan("dp=2,mb=4")) == 16);
  CHECK(default_global_batch(parse_plan("pp=2,mb=8")) == 16);
  CHECK(default_global_batch(parse_plan("dp=1")) == 8);
  CHECK(default_batch_for_gpus(4) == 32);
  const ModelSpec m = load_model("gpt2-nano");
  for (int dp : {1, 2, 3, 4})
    for (int mb = 1; mb <= 20; ++mb) {
      Plan p;
      p.dp = dp, p.mb = mb;
      const int B = default_global_batch(p);
      CAPTURE(dp);
      CAPTURE(mb);
      CHECK(B >= default_batch_for_gpus(dp));
      CHECK(B - default_batch_for_gpus(dp) < dp * mb);  // the least such multiple
      CHECK_NOTHROW(validate(p, m, B));
    }
}

TEST_CASE("the executor's precisions: fp32 on cpu; fp32, tf32, bf16 or fp16 on cuda") {
  CHECK_FALSE(why_not_runnable(parse_plan("dp=2"), ExecutorDevice::cpu));
  CHECK_FALSE(why_not_runnable(parse_plan("dp=1,precision=tf32"), ExecutorDevice::cuda));
  const auto bf16 = why_not_runnable(parse_plan("dp=1,precision=bf16"), ExecutorDevice::cpu);
  REQUIRE(bf16);
  CHECK(bf16->find("precision=bf16: fabtrain-exec trains in fp32 on cpu") == 0);
  CHECK_FALSE(why_not_runnable(parse_plan("dp=1,precision=bf16"), ExecutorDevice::cuda));
  CHECK_FALSE(why_not_runnable(parse_plan("dp=1,precision=fp16"), ExecutorDevice::cuda));
  const auto fp16 = why_not_runnable(parse_plan("dp=1,precision=fp16"), ExecutorDevice::cpu);
  REQUIRE(fp16);
  CHECK(fp16->find("precision=fp16: fabtrain-exec trains in fp32 on cpu") == 0);
  CHECK(why_not_runnable(parse_plan("dp=1,precision=tf32"), ExecutorDevice::cpu));
  // A flash plan's memory leaves out the scores the executor's attention keeps.
  const auto flash = why_not_runnable(parse_plan("dp=1,attention=flash"), ExecutorDevice::cuda);
  REQUIRE(flash);
  CHECK(flash->find("attention=flash: ") == 0);
  const Plan half = parse_plan("dp=1,precision=bf16");
  CHECK(test::error_of([&] { require_runnable(half, ExecutorDevice::cpu); }) ==
        "--plan " + to_string(half) + ": " + *bf16);
  CHECK_NOTHROW(require_runnable(parse_plan("dp=1"), ExecutorDevice::cpu));
}
