// vocab=parallel: tensor-parallel ranks split the token embedding, the output layer and the loss
// by vocabulary (Megatron-LM's VocabParallelEmbedding, parallel output layer and cross-entropy);
// vocab=replicated (the default) holds them whole on every rank, as fabtrain-exec plays them.
#include <doctest/doctest.h>

#include <algorithm>

#include "common/error.hpp"
#include "models/model_spec.hpp"
#include "plan/executor_support.hpp"
#include "plan/schedule.hpp"
#include "plan/symbolic_run.hpp"
#include "tests/plan/two_word_key.hpp"

using namespace fabtrain;

namespace {

// The tensor-parallel collectives of rank 0's stream by block, forward or backward.
std::vector<double> tp_bytes(const Schedule& s, int block, Purpose purpose) {
  std::vector<double> bytes;
  for (const Instruction& in : s.ranks[0])
    if (const auto* c = std::get_if<Collective>(&in))
      if (c->purpose == purpose && c->block == block) bytes.push_back(c->bytes);
  return bytes;
}

const Forward& head_forward(const Schedule& s, int head) {
  for (const Instruction& in : s.ranks[0])
    if (const auto* f = std::get_if<Forward>(&in))
      if (f->begin == head) return *f;
  FAIL("no forward of the head");
  throw Error("unreachable");
}

}  // namespace

TEST_CASE("vocab: parsed and printed only when parallel") {
  CHECK(parse_plan("dp=1,tp=4,vocab=parallel").vocab_parallel);
  test::check_two_word_key("dp=1,tp=4,vocab=parallel", "vocab=parallel", "tp=4,vocab=replicated",
                           "tp=4,vocab=split", "'split' is not parallel or replicated");
}

TEST_CASE("vocab=parallel splits the embedding, the head and their memory over tp ranks") {
  const ModelSpec m = load_model("gpt2");
  const int b = 2, s = 256, tp = 4;
  const Schedule whole = compile(m, parse_plan("dp=1,tp=4,mb=1"), b, s);
  const Schedule split = compile(m, parse_plan("dp=1,tp=4,mb=1,vocab=parallel"), b, s);
  const SymbolicRun run = symbolic_run(split);
  CHECK_MESSAGE(run.ok, run.message);
  // wte's rows: 3/4 of V x C fewer parameters per rank (the position embedding stays whole)
  const double wte = double(m.vocab_size) * m.n_embd;
  CHECK(whole.model_state[0].weights - split.model_state[0].weights ==
        doctest::Approx(wte * (1 - 1.0 / tp) * 4));
  // the head's logits and what it keeps for backward: a quarter of the vocabulary each
  const int head = block_count(m) - 1;
  const Forward& f0 = head_forward(whole, head);
  const Forward& f1 = head_forward(split, head);
  CHECK(f1.flops * tp == doctest::Approx(f0.flops));
  CHECK(f1.activation_bytes < f0.activation_bytes);
  CHECK(f1.replicas == 1);
  CHECK(f0.replicas == tp);
  // the embedding's output summed over the group; the loss's three per-token reductions; the
  // head's input gradient
  const double boundary = double(b) * s * m.n_embd * 4;
  CHECK(tp_bytes(whole, 0, Purpose::tp_forward).empty());
  CHECK(tp_bytes(split, 0, Purpose::tp_forward) == std::vector<double>{boundary});
  CHECK(tp_bytes(split, 0, Purpose::tp_backward).empty());
  CHECK(tp_bytes(split, head, Purpose::tp_forward) == std::vector<double>(3, double(b) * s * 4));
  CHECK(tp_bytes(split, head, Purpose::tp_backward) == std::vector<double>{boundary});
  CHECK(tp_bytes(whole, head, Purpose::tp_backward).empty());
}

TEST_CASE("vocab=parallel: the tied embedding's sum between first and last stage is a slice") {
  const ModelSpec m = load_model("gpt2");
  const Schedule split = compile(m, parse_plan("dp=1,tp=2,pp=2,mb=2,vocab=parallel"), 4, 128);
  const SymbolicRun run = symbolic_run(split);
  CHECK_MESSAGE(run.ok, run.message);
  for (const Instruction& in : split.ranks[0])
    if (const auto* c = std::get_if<Collective>(&in))
      if (c->purpose == Purpose::tied_embedding)
        CHECK(c->bytes == doctest::Approx(double(m.vocab_size) * m.n_embd * 4 / 2));
}

TEST_CASE("fabtrain-exec refuses vocab=parallel with tp > 1, naming the key") {
  const auto why = why_not_runnable(parse_plan("tp=2,vocab=parallel"), ExecutorDevice::cpu);
  REQUIRE(why);
  CHECK(why->find("vocab=parallel") != std::string::npos);
  CHECK_FALSE(why_not_runnable(parse_plan("tp=1,vocab=parallel"), ExecutorDevice::cpu));
}
