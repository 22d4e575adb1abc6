// Overlap in compiled schedules: where starts and waits go, that overlap=off issues the
// same bucket collectives blocking, that requests pair, and that the symbolic runner refuses a
// wait without a start, a reused request, a double wait and a start never waited.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "plan/buckets.hpp"
#include "plan/request_rules.hpp"
#include "plan/schedule.hpp"
#include "plan/symbolic_run.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

// The data-parallel collectives of a stream of one purpose in order, as text without their
// requests (ZeRO-3 interleaves gathers and reduce-scatters differently with overlap on and off;
// each purpose's order is the same).
std::vector<std::string> dp_collectives(const std::vector<Instruction>& stream, Purpose purpose) {
  std::vector<std::string> out;
  for (const auto& in : stream)
    if (auto c = std::get_if<Collective>(&in); c && c->purpose == purpose) {
      Collective blocking = *c;
      blocking.request = -1;
      out.push_back(to_string(Instruction(blocking)));
    }
  return out;
}

int count_waits(const std::vector<Instruction>& stream) {
  int n = 0;
  for (const auto& in : stream) n += std::holds_alternative<Wait>(in);
  return n;
}

// Index of the first instruction matching pred, or -1.
template <class P>
int find(const std::vector<Instruction>& stream, P pred, int from = 0) {
  for (int i = from; i < int(stream.size()); ++i)
    if (pred(stream[i])) return i;
  return -1;
}

}  // namespace

TEST_CASE("requests are numbered per rank in stream order and each start has one wait") {
  const ModelSpec gpt2 = load_model("gpt2");
  for (const char* text : {"dp=2,mb=2", "dp=2,zero=1", "dp=2,zero=2,mb=2", "dp=2,zero=3,mb=2",
                           "pp=2,mb=4", "dp=2,tp=2,pp=2,mb=3,zero=3,schedule=gpipe"}) {
    CAPTURE(text);
    const Plan plan = parse_plan(text);
    const Schedule s = compile(gpt2, plan, 2 * plan.dp * plan.mb, 128);
    for (const auto& stream : s.ranks) {
      int next = 0;
      std::set<int> waited;
      for (const auto& in : stream) {
        std::visit(
            [&](const auto& i) {
              using T = std::decay_t<decltype(i)>;
              if constexpr (std::is_same_v<T, Send> || std::is_same_v<T, Recv> ||
                            std::is_same_v<T, Collective>) {
                if (i.request >= 0) CHECK(i.request == next++);
              } else if constexpr (std::is_same_v<T, Wait>) {
                CHECK(i.request < next);
                CHECK(waited.insert(i.request).second);
              }
            },
            in);
      }
      CHECK(int(waited.size()) == next);
    }
    const SymbolicRun run = symbolic_run(s);
    CHECK_MESSAGE(run.ok, run.message);
  }
}

TEST_CASE(
    "dp=2: a bucket's all-reduce starts right after its backward, all waited before the norm") {
  const ModelSpec gpt2 = load_model("gpt2");
  const Plan plan = parse_plan("dp=2,mb=2");
  const Schedule s = compile(gpt2, plan, 8, 128);
  const auto buckets = gradient_buckets(gpt2, plan, 0);
  REQUIRE(buckets.size() > 3);
  const auto& stream = s.ranks[0];
  // The first microbatch accumulates (one Backward), the last is split per bucket.
  int bucket = 0;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const auto* bw = std::get_if<Backward>(&stream[i]);
    if (!bw || bw->mb != 1) continue;
    REQUIRE(bucket < int(buckets.size()));
    CHECK(bw->begin == buckets[bucket].begin);
    CHECK(bw->end == buckets[bucket].end);
    REQUIRE(i + 1 < stream.size());
    const auto* start = std::get_if<Collective>(&stream[i + 1]);
    REQUIRE(start);
    CHECK(start->purpose == Purpose::dp_gradients);
    CHECK(start->request >= 0);
    CHECK(start->begin == bw->begin);
    CHECK(start->end == bw->end);
    ++bucket;
  }
  CHECK(bucket == int(buckets.size()));
  const int norm = find(stream, [](const Instruction& in) {
    auto c = std::get_if<Collective>(&in);
    return c && c->purpose == Purpose::grad_norm;
  });
  REQUIRE(norm > 0);
  CHECK(count_waits(stream) == int(buckets.size()));
  for (int i = norm; i < int(stream.size()); ++i)
    CHECK_FALSE(std::holds_alternative<Wait>(stream[i]));
  // Waited in bucket order, right before the norm.
  CHECK(std::holds_alternative<Wait>(stream[norm - 1]));
  CHECK(std::get<Wait>(stream[norm - int(buckets.size())]).request ==
        std::get<Collective>(stream[find(stream, [](const Instruction& in) {
          auto c = std::get_if<Collective>(&in);
          return c && c->request >= 0;
        })]).request);
}

TEST_CASE("overlap=off issues the same bucket collectives, blocking, after the backward") {
  const ModelSpec gpt2 = load_model("gpt2");
  for (const char* text : {"dp=2,mb=2", "dp=2,zero=1", "dp=2,zero=2,mb=2", "dp=2,zero=3,mb=2",
                           "dp=2,pp=2,mb=3,zero=1", "dp=2,tp=2,zero=2"}) {
    CAPTURE(text);
    Plan on = parse_plan(text), off = on;
    off.overlap = false;
    const int B = 4 * on.dp * on.mb;
    const Schedule a = compile(gpt2, on, B, 128), b = compile(gpt2, off, B, 128);
    for (int r = 0; r < a.world; ++r) {
      for (Purpose p : {Purpose::dp_gradients, Purpose::zero_gradients, Purpose::zero_parameters})
        CHECK(dp_collectives(a.ranks[r], p) == dp_collectives(b.ranks[r], p));
      CHECK(count_waits(b.ranks[r]) == 0);
      for (const auto& in : b.ranks[r]) {
        if (auto c = std::get_if<Collective>(&in)) CHECK(c->request == -1);
        if (auto x = std::get_if<Send>(&in)) CHECK(x->request == -1);
        if (auto x = std::get_if<Recv>(&in)) CHECK(x->request == -1);
      }
    }
    // overlap=off, zero 0/1: one Backward per microbatch, the bucket collectives after the last.
    if (on.zero <= 1 && on.tp == 1 && on.pp == 1) {
      const auto& stream = b.ranks[0];
      int backwards = 0;
      for (const auto& in : stream) backwards += std::holds_alternative<Backward>(in);
      CHECK(backwards == on.mb);
    }
    CHECK(symbolic_run(b).ok);
  }
}

TEST_CASE("ZeRO-3 gathers the next bucket before waiting for the current one") {
  const ModelSpec gpt2 = load_model("gpt2");
  const Plan plan = parse_plan("dp=2,zero=3");
  const Schedule s = compile(gpt2, plan, 4, 128);
  const auto& stream = s.ranks[0];
  const auto buckets = gradient_buckets(gpt2, plan, 0);
  // Before the first Forward: the gathers of the first two buckets started, the first waited.
  const int first_forward =
      find(stream, [](const Instruction& in) { return std::holds_alternative<Forward>(in); });
  REQUIRE(first_forward > 0);
  int gathers = 0, waits = 0;
  for (int i = 0; i < first_forward; ++i) {
    if (auto c = std::get_if<Collective>(&stream[i])) {
      CHECK(c->purpose == Purpose::zero_parameters);
      CHECK(c->request >= 0);
      ++gathers;
    }
    waits += std::holds_alternative<Wait>(stream[i]);
  }
  CHECK(gathers == 2);
  CHECK(waits == 1);
  CHECK(std::holds_alternative<Wait>(stream[first_forward - 1]));
  // The first forward bucket is the stage's first blocks (buckets run backward).
  CHECK(std::get<Forward>(stream[first_forward]).begin == buckets.back().begin);
  CHECK(symbolic_run(s).ok);
  CHECK(symbolic_run(s).peak_request_bytes[0] > 0);
}

TEST_CASE("pipeline: receives posted ahead, waited right before the compute; sends waited") {
  const ModelSpec nano = load_model("gpt2-nano");
  const Schedule s = compile(nano, parse_plan("pp=2,mb=4"), 8, 32);
  // Stage 1 posts mb 0's activation receive first and waits it right before its forward.
  const auto& stage1 = s.ranks[1];
  const auto* first = std::get_if<Recv>(&stage1[0]);
  REQUIRE(first);
  CHECK(first->request == 0);
  CHECK(first->mb == 0);
  const int forward0 =
      find(stage1, [](const Instruction& in) { return std::holds_alternative<Forward>(in); });
  REQUIRE(forward0 > 0);
  CHECK(std::get<Wait>(stage1[forward0 - 2]).what == Awaits::recv);
  // then posts mb 1's receive before it computes mb 0
  CHECK(std::get<Recv>(stage1[forward0 - 1]).mb == 1);
  // Stage 0 waits each activation send before the next one, the last at the end of the step.
  const auto& stage0 = s.ranks[0];
  CHECK(std::holds_alternative<Wait>(stage0.back()));
  const SymbolicRun run = symbolic_run(s);
  REQUIRE_MESSAGE(run.ok, run.message);
}

TEST_CASE("the symbolic runner refuses wait and request errors by name") {
  const ModelSpec nano = load_model("gpt2-nano");
  const Schedule good = compile(nano, parse_plan("pp=2,mb=2"), 4, 32);
  REQUIRE(symbolic_run(good).ok);

  Schedule no_start = good;
  no_start.ranks[0].push_back(Wait{42, Awaits::send, 8});
  CHECK(symbolic_run(no_start).message.find("wait without a start of request 42") !=
        std::string::npos);

  Schedule twice = good;
  const int last_wait =
      find(twice.ranks[0], [](const Instruction& in) { return std::holds_alternative<Wait>(in); });
  REQUIRE(last_wait >= 0);
  twice.ranks[0].push_back(twice.ranks[0][last_wait]);
  CHECK(symbolic_run(twice).message.find("already waited") != std::string::npos);

  Schedule never = good;
  for (auto it = never.ranks[0].begin(); it != never.ranks[0].end(); ++it)
    if (std::holds_alternative<Wait>(*it)) {
      never.ranks[0].erase(it);
      break;
    }
  CHECK(symbolic_run(never).message.find("started, never waited") != std::string::npos);

  Schedule reused = good;
  Send again{Tensor::activation, 0, 1, 8};
  again.request = 0;  // rank 0's first request is taken
  reused.ranks[0].push_back(again);
  CHECK(symbolic_run(reused).message.find("request 0 reused") != std::string::npos);

  Schedule wrong_kind = good;
  for (auto& in : wrong_kind.ranks[0])
    if (auto* w = std::get_if<Wait>(&in)) {
      w->what = Awaits::collective;
      break;
    }
  CHECK(symbolic_run(wrong_kind).message.find("started as") != std::string::npos);
}

TEST_CASE("request rules: one rank's stream is checked alone, each rule by name") {
  const ModelSpec nano = load_model("gpt2-nano");
  const Schedule good = compile(nano, parse_plan("dp=2,tp=2,pp=2,mb=2"), 8, 32);
  for (int r = 0; r < good.world; ++r) {
    CHECK_FALSE(request_error(good.ranks[r]).has_value());
    CHECK_NOTHROW(check_requests(good.ranks[r], r));
  }
  // A tensor-parallel sum the next block needs at once cannot be started.
  Schedule started_tp = good;
  std::size_t at = 0;
  for (; at < started_tp.ranks[1].size(); ++at)
    if (auto* c = std::get_if<Collective>(&started_tp.ranks[1][at]);
        c && c->purpose == Purpose::tp_forward) {
      c->request = 99;
      break;
    }
  REQUIRE(at < started_tp.ranks[1].size());
  started_tp.ranks[1].insert(started_tp.ranks[1].begin() + at + 1,
                             Wait{99, Awaits::collective, 8, CollectiveOp::all_reduce});
  const auto e = request_error(started_tp.ranks[1]);
  REQUIRE(e.has_value());
  CHECK(e->at == at);
  CHECK(e->why.find("cannot be non-blocking") != std::string::npos);
  CHECK_THROWS_WITH_AS(check_requests(started_tp.ranks[1], 1), doctest::Contains("rank 1 at #"),
                       Error);
  // symbolic_run reports the same, with the rank and the instruction.
  const SymbolicRun run = symbolic_run(started_tp);
  CHECK_FALSE(run.ok);
  CHECK(run.message.find("rank 1 at #" + std::to_string(at)) != std::string::npos);
  CHECK(run.message.find("cannot be non-blocking") != std::string::npos);
}

namespace {

// Compares the schedule's text with tests/plan/golden/<name>.txt (FABTRAIN_UPDATE_GOLDEN=1
// rewrites it; review the diff).
void check_golden(const Schedule& s, const std::string& name) {
  const std::string text = to_text(s);
  const std::filesystem::path golden =
      std::filesystem::path(source_dir()) / "tests" / "plan" / "golden" / (name + ".txt");
  const char* update = std::getenv("FABTRAIN_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(golden) << text;
    MESSAGE("rewrote ", golden.string());
  }
  std::ifstream in(golden);
  REQUIRE_MESSAGE(in.good(), "missing ", golden.string(), " (run with FABTRAIN_UPDATE_GOLDEN=1)");
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(text == expected.str());
  const SymbolicRun run = symbolic_run(s);
  CHECK_MESSAGE(run.ok, run.message);
}

// Two layers of 256 wide: about 1 MiB per attention block and 2 MiB per MLP block in fp32, so
// 2 MiB buckets make three of them.
const ModelSpec& mini() {
  static const ModelSpec m{"gpt2-mini-test", 2, 256, 4, 128, 512};
  return m;
}

}  // namespace

TEST_CASE("golden schedule: dp=2 with 2 MiB gradient buckets, overlapped") {
  REQUIRE(gradient_buckets(mini(), parse_plan("dp=2,bucket_mib=2"), 0).size() == 3);
  check_golden(compile(mini(), parse_plan("dp=2,mb=2,bucket_mib=2"), 4, 32),
               "gpt2-mini_dp2_mb2_buckets");
}

TEST_CASE("golden schedule: ZeRO-3 with prefetch, overlapped") {
  check_golden(compile(mini(), parse_plan("dp=2,zero=3,bucket_mib=2"), 2, 32),
               "gpt2-mini_dp2_zero3_prefetch");
}

TEST_CASE("golden schedule: pp=2 1F1B with non-blocking transfers") {
  check_golden(compile(load_model("gpt2-nano"), parse_plan("pp=2,mb=3"), 6, 32),
               "gpt2-nano_pp2_mb3_1f1b_overlap");
}
