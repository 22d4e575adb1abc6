// p2p=scatter: each tensor-parallel rank sends and receives 1/tp of a pipeline stage's boundary
// tensor and the receiving stage all-gathers it over its tp group (Megatron-LM's
// --scatter-gather-tensors-in-pipeline); p2p=whole (the default) sends it whole from every rank,
// as fabtrain-exec plays it.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "common/error.hpp"
#include "models/model_spec.hpp"
#include "plan/executor_support.hpp"
#include "plan/schedule.hpp"
#include "plan/symbolic_run.hpp"
#include "tests/plan/two_word_key.hpp"

using namespace fabtrain;

namespace {

struct PipelineTraffic {
  double sent = 0, received = 0, gathered = 0;
  int gathers = 0;
};

PipelineTraffic traffic_of(const std::vector<Instruction>& stream) {
  PipelineTraffic t;
  for (const Instruction& in : stream) {
    if (const auto* s = std::get_if<Send>(&in)) t.sent += s->bytes;
    if (const auto* r = std::get_if<Recv>(&in)) t.received += r->bytes;
    if (const auto* c = std::get_if<Collective>(&in))
      if (c->purpose == Purpose::pipeline_gather) {
        CHECK(c->op == CollectiveOp::all_gather);
        t.gathered += c->bytes;
        ++t.gathers;
      }
  }
  return t;
}

}  // namespace

TEST_CASE("p2p: parsed and printed only when scatter") {
  CHECK(parse_plan("tp=2,pp=2,p2p=scatter").pipeline_scatter);
  test::check_two_word_key("tp=2,pp=2,p2p=scatter", "p2p=scatter", "tp=2,pp=2,p2p=whole",
                           "tp=2,p2p=split", "'split' is not scatter or whole");
}

TEST_CASE("p2p=scatter sends 1/tp from each tp rank and all-gathers every received tensor") {
  const ModelSpec m = load_model("gpt2");
  const int b = 2, s = 128, tp = 4, mb = 3;
  for (const char* overlap : {"on", "off"}) {
    CAPTURE(overlap);
    const std::string base = fmt::format("dp=1,tp={},pp=2,mb={},overlap={}", tp, mb, overlap);
    const Schedule whole = compile(m, parse_plan(base), b * mb, s);
    const Schedule split = compile(m, parse_plan(base + ",p2p=scatter"), b * mb, s);
    const SymbolicRun run = symbolic_run(split);
    CHECK_MESSAGE(run.ok, run.message);
    const double boundary = double(b) * s * m.n_embd * 4;
    for (int rank = 0; rank < split.world; ++rank) {
      CAPTURE(rank);
      const PipelineTraffic w = traffic_of(whole.ranks[rank]);
      const PipelineTraffic t = traffic_of(split.ranks[rank]);
      CHECK(w.gathers == 0);
      CHECK(t.sent * tp == doctest::Approx(w.sent));
      CHECK(t.received * tp == doctest::Approx(w.received));
      // every stage receives mb tensors a step (activations into the last, gradients into the
      // first), each gathered whole
      CHECK(w.received == doctest::Approx(mb * boundary));
      CHECK(t.gathers == mb);
      CHECK(t.gathered == doctest::Approx(mb * boundary));
    }
  }
}

TEST_CASE("p2p=scatter changes nothing without tensor or pipeline parallelism") {
  const ModelSpec m = load_model("gpt2");
  const Schedule a = compile(m, parse_plan("tp=1,pp=2,mb=2"), 4, 128);
  const Schedule b = compile(m, parse_plan("tp=1,pp=2,mb=2,p2p=scatter"), 4, 128);
  for (int rank = 0; rank < a.world; ++rank) {
    CHECK(traffic_of(b.ranks[rank]).gathers == 0);
    CHECK(traffic_of(b.ranks[rank]).sent == traffic_of(a.ranks[rank]).sent);
  }
}

TEST_CASE("fabtrain-exec refuses p2p=scatter with tp > 1 and pp > 1, naming the key") {
  const auto why = why_not_runnable(parse_plan("tp=2,pp=2,p2p=scatter"), ExecutorDevice::cpu);
  REQUIRE(why);
  CHECK(why->find("p2p=scatter") != std::string::npos);
  CHECK_FALSE(why_not_runnable(parse_plan("tp=2,pp=1,p2p=scatter"), ExecutorDevice::cpu));
  CHECK_FALSE(why_not_runnable(parse_plan("tp=1,pp=2,p2p=scatter"), ExecutorDevice::cpu));
}
