// Schedules: every plan of a sweep plays to the end symbolically, and its work and traffic equal
// the formulas of the reference (shared/reference/training-formulas.md): the study's step FLOPs,
// data-parallel and ZeRO gradient volumes, Megatron's tensor-parallel all-reduces, one pipeline
// transfer each way per boundary per microbatch, and the pipeline's in-flight microbatches.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "models/model_spec.hpp"
#include "plan/block_work.hpp"
#include "plan/schedule.hpp"
#include "plan/symbolic_run.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

// Bytes one rank sends in a ring collective of n ranks over a buffer of S bytes.
double ring_bytes(CollectiveOp op, int n, double S) {
  const double share = double(n - 1) / n * S;
  return op == CollectiveOp::all_reduce ? 2 * share : share;
}

// The checks of one compiled plan; the caller sets INFO to the plan.
void check_schedule(const ModelSpec& m, const Plan& plan, int B, int s) {
  const Schedule sched = compile(m, plan, B, s);
  const int b = B / (plan.dp * plan.mb);
  const double e = element_bytes(plan.precision);
  const double boundary = double(b) * s * m.n_embd * e;
  REQUIRE(sched.world == plan.ranks());
  REQUIRE(int(sched.ranks.size()) == plan.ranks());
  CHECK(sched.microbatch == b);

  // Plays to the end, and holds what the pipeline schedule promises.
  const SymbolicRun run = symbolic_run(sched);
  REQUIRE_MESSAGE(run.ok, run.message);
  const std::vector<int> layers = stage_layers(m, plan);

  double flops = 0;
  for (int r = 0; r < sched.world; ++r) {
    const RankCoord c = rank_coord(plan, r);
    const int stage = c.pp;
    const bool first = stage == 0, last = stage == plan.pp - 1;
    const double params = stage_parameters(m, plan, stage);
    CHECK(run.instructions_done[r] == int(sched.ranks[r].size()));
    const int expected_in_flight =
        plan.schedule == PipelineSchedule::gpipe ? plan.mb : std::min(plan.pp - stage, plan.mb);
    CHECK(run.peak_in_flight[r] == expected_in_flight);
    CHECK(sched.static_bytes[r] ==
          doctest::Approx(model_state_bytes(params, plan.precision, plan.zero, plan.dp).total()));

    int loads = 0, sends_act = 0, sends_grad = 0, recvs_act = 0, recvs_grad = 0, tp_fwd = 0,
        tp_bwd = 0, tied = 0, norms = 0, opts = 0;
    double dp_traffic = 0, act_mb0 = 0;
    for (const auto& in : sched.ranks[r]) {
      if (const auto* f = std::get_if<Forward>(&in)) {
        flops += f->flops / f->replicas;
        if (f->mb == 0) act_mb0 += f->activation_bytes;
      } else if (const auto* bw = std::get_if<Backward>(&in)) {
        flops += bw->flops / bw->replicas;
      } else if (const auto* l = std::get_if<LoadMicrobatch>(&in)) {
        ++loads;
        CHECK(l->sequences == b);
        CHECK(l->tokens == b * s);
      } else if (const auto* snd = std::get_if<Send>(&in)) {
        CHECK(snd->bytes == boundary);
        (snd->what == Tensor::activation ? sends_act : sends_grad)++;
        const RankCoord peer = rank_coord(plan, snd->peer);
        CHECK(peer.dp == c.dp);
        CHECK(peer.tp == c.tp);
        CHECK(peer.pp == stage + (snd->what == Tensor::activation ? 1 : -1));
      } else if (const auto* rcv = std::get_if<Recv>(&in)) {
        CHECK(rcv->bytes == boundary);
        (rcv->what == Tensor::activation ? recvs_act : recvs_grad)++;
      } else if (const auto* col = std::get_if<Collective>(&in)) {
        const int n = int(sched.groups.at(col->group).size());
        switch (col->purpose) {
          case Purpose::tp_forward:
          case Purpose::tp_backward:
            (col->purpose == Purpose::tp_forward ? tp_fwd : tp_bwd)++;
            CHECK(col->op == CollectiveOp::all_reduce);
            CHECK(col->bytes == boundary);
            CHECK(n == plan.tp);
            break;
          case Purpose::dp_gradients:
          case Purpose::zero_gradients:
          case Purpose::zero_parameters:
            // One bucket of the stage's parameters (plan/buckets.hpp); the buckets sum to them.
            CHECK(col->begin >= 0);
            CHECK(col->bytes <= doctest::Approx(params * e));
            CHECK(n == plan.dp);
            dp_traffic += ring_bytes(col->op, n, col->bytes);
            break;
          case Purpose::tied_embedding:
            ++tied;
            CHECK(col->bytes == double(m.vocab_size) * m.n_embd * e);
            break;
          case Purpose::grad_norm:
            ++norms;
            CHECK(col->bytes == 8);  // squared norm and loss
            CHECK(n == sched.world);
            break;
          case Purpose::pipeline_gather:  // p2p=scatter only (test_pipeline_scatter.cpp)
            FAIL("a pipeline gather in a p2p=whole schedule");
            break;
        }
      } else if (const auto* opt = std::get_if<OptimizerStep>(&in)) {
        ++opts;
        CHECK(opt->parameters * (plan.zero >= 1 ? plan.dp : 1) == doctest::Approx(params));
      }
    }
    CHECK(loads == ((first || last) ? plan.mb : 0));
    CHECK(sends_act == (last ? 0 : plan.mb));
    CHECK(recvs_act == (first ? 0 : plan.mb));
    CHECK(sends_grad == (first ? 0 : plan.mb));
    CHECK(recvs_grad == (last ? 0 : plan.mb));
    // Megatron: 2 all-reduces forward and 2 backward per layer per microbatch.
    CHECK(tp_fwd == (plan.tp > 1 ? 2 * layers[stage] * plan.mb : 0));
    CHECK(tp_bwd == tp_fwd);
    CHECK(tied == ((plan.pp > 1 && (first || last)) ? 1 : 0));
    CHECK(norms == 1);
    CHECK(opts == 1);
    // Every microbatch keeps the same activations, so the peak is in-flight times one's worth.
    CHECK(run.peak_activation_bytes[r] == doctest::Approx(expected_in_flight * act_mb0));

    // Data-parallel traffic per rank (ring): DP all-reduce once per step; ZeRO-1 the same;
    // ZeRO-2 reduce-scatters every microbatch; ZeRO-3 is 1.5x DP per microbatch.
    const double dp_volume = plan.dp > 1 ? 2.0 * (plan.dp - 1) / plan.dp * params * e : 0;
    double expected_dp = dp_volume;
    if (plan.zero == 2) expected_dp = dp_volume / 2 * (plan.mb + 1);
    if (plan.zero == 3) expected_dp = 1.5 * dp_volume * plan.mb;
    CHECK(dp_traffic == doctest::Approx(expected_dp));
  }
  CHECK(flops == doctest::Approx(alpa_step_flops(m, B, s, plan.recompute)).epsilon(1e-9));
}

// overlap_off: each plan also with overlap=off.
std::vector<Plan> sweep(const ModelSpec& m, bool overlap_off) {
  std::vector<Plan> plans;
  const int degrees[] = {1, 2, 4};
  for (int dp : degrees)
    for (int tp : degrees)
      for (int pp : degrees) {
        if (dp * tp * pp > 16 || pp > m.n_layer || m.n_head % tp != 0) continue;
        for (int mb : {1, 2, 4, 8})
          for (auto kind : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
            for (int zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero)
              for (bool recompute : {false, true})
                for (bool overlap : {true, false}) {
                  if (!overlap && !overlap_off) continue;
                  Plan p;
                  p.dp = dp, p.tp = tp, p.pp = pp, p.mb = mb, p.zero = zero;
                  p.schedule = kind;
                  p.recompute = recompute;
                  p.overlap = overlap;
                  plans.push_back(p);
                }
      }
  return plans;
}

}  // namespace

TEST_CASE("every send has its matching receive") {
  const ModelSpec nano = load_model("gpt2-nano");
  for (const char* text : {"pp=2,mb=4", "dp=2,tp=2,pp=2,mb=3,schedule=gpipe", "pp=2,tp=4,mb=8"}) {
    INFO(text);
    const Plan plan = parse_plan(text);
    const Schedule s = compile(nano, plan, 2 * plan.dp * plan.mb, 32);
    // (from, to, tensor, mb, bytes) of every send, removed by its receive.
    std::multiset<std::tuple<int, int, int, int, double>> pending;
    int sends = 0;
    for (int r = 0; r < s.world; ++r)
      for (const auto& in : s.ranks[r])
        if (const auto* snd = std::get_if<Send>(&in)) {
          pending.insert({r, snd->peer, int(snd->what), snd->mb, snd->bytes});
          ++sends;
        }
    CHECK(sends == 2 * plan.mb * (plan.pp - 1) * plan.dp * plan.tp);
    for (int r = 0; r < s.world; ++r)
      for (const auto& in : s.ranks[r])
        if (const auto* rcv = std::get_if<Recv>(&in)) {
          auto it = pending.find({rcv->peer, r, int(rcv->what), rcv->mb, rcv->bytes});
          REQUIRE_MESSAGE(it != pending.end(), "unmatched receive on rank ", r, ": ",
                          to_string(in));
          pending.erase(it);
        }
    CHECK(pending.empty());
  }
}

TEST_CASE("sweep on gpt2-nano: plays through and matches the formulas") {
  const ModelSpec m = load_model("gpt2-nano");
  const auto plans = sweep(m, true);
  CHECK(plans.size() > 400);
  for (const Plan& plan : plans) {
    INFO(to_string(plan));
    check_schedule(m, plan, 2 * plan.dp * plan.mb, 64);
  }
}

TEST_CASE("sweep on gpt2-medium: plays through and matches the formulas") {
  const ModelSpec m = load_model("gpt2-medium");
  const auto plans = sweep(m, false);
  CHECK(plans.size() > 400);
  for (const Plan& plan : plans) {
    INFO(to_string(plan));
    check_schedule(m, plan, plan.dp * plan.mb, 1024);
  }
}

TEST_CASE("uneven layer split, mixed precision and explicit devices also match") {
  const ModelSpec m = load_model("gpt2");
  for (const char* text : {"pp=3,layers=2:7:3,mb=5,precision=bf16",
                           "dp=2,tp=3,pp=2,mb=4,zero=3,layers=8:4,precision=fp16,recompute=on",
                           "dp=2,pp=2,devices=3:1:2:0,zero=1,schedule=gpipe"}) {
    INFO(text);
    const Plan plan = parse_plan(text);
    check_schedule(m, plan, 3 * plan.dp * plan.mb, 256);
  }
}

TEST_CASE("the symbolic runner reports deadlocks, unmatched sends and mismatches") {
  const ModelSpec nano = load_model("gpt2-nano");
  const Schedule good = compile(nano, parse_plan("pp=2,mb=2,dp=2"), 8, 32);
  REQUIRE(symbolic_run(good).ok);

  // Both stages receive first: nobody sends.
  Schedule deadlock = good;
  // (ranks 0 and 2 are dp 0 of stages 0 and 1)
  deadlock.ranks[0].insert(deadlock.ranks[0].begin(), Recv{Tensor::gradient, 0, 2, 1.0});
  deadlock.ranks[2].insert(deadlock.ranks[2].begin(), Recv{Tensor::gradient, 0, 0, 1.0});
  const SymbolicRun stuck = symbolic_run(deadlock);
  CHECK_FALSE(stuck.ok);
  CHECK(stuck.message.find("deadlock") != std::string::npos);
  CHECK(stuck.message.find("rank 0 at #0 'recv grad mb=0 from=2") != std::string::npos);

  // A send nobody receives.
  Schedule extra = good;
  extra.ranks[1].push_back(Send{Tensor::activation, 7, 3, 8});
  const SymbolicRun unmatched = symbolic_run(extra);
  CHECK_FALSE(unmatched.ok);
  CHECK(unmatched.message.find("never received") != std::string::npos);

  // A receive that expects other bytes than were sent.
  Schedule bytes = good;
  for (auto& in : bytes.ranks[2])
    if (auto* rcv = std::get_if<Recv>(&in)) {
      rcv->bytes += 1;
      break;
    }
  CHECK(symbolic_run(bytes).message.find("rank 0 sent mb=0") != std::string::npos);

  // Two members of a group at different collectives.
  Schedule mismatch = good;
  for (auto& in : mismatch.ranks[0])
    if (auto* col = std::get_if<Collective>(&in)) {
      col->bytes *= 2;
      break;
    }
  CHECK(symbolic_run(mismatch).message.find("collective mismatch") != std::string::npos);
}

TEST_CASE("golden schedule: gpt2-nano dp=1,tp=2,pp=2,mb=2 1f1b, B=4 s=64") {
  const ModelSpec nano = load_model("gpt2-nano");
  const Schedule s = compile(nano, parse_plan("dp=1,tp=2,pp=2,mb=2,schedule=1f1b"), 4, 64);
  const std::string text = to_text(s);
  const std::filesystem::path golden = std::filesystem::path(source_dir()) / "tests" / "plan" /
                                       "golden" / "gpt2-nano_tp2_pp2_mb2_1f1b.txt";
  const char* update = std::getenv("FABTRAIN_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::filesystem::create_directories(golden.parent_path());
    std::ofstream(golden) << text;
    MESSAGE("rewrote ", golden.string());
  }
  std::ifstream in(golden);
  REQUIRE_MESSAGE(in.good(), "missing ", golden.string(), " (run with FABTRAIN_UPDATE_GOLDEN=1)");
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(text == expected.str());

  // to_text of one rank is that rank's lines only.
  const std::string rank1 = to_text(s, 1);
  CHECK(rank1.find("rank 0:") == std::string::npos);
  // (stage 0 first posts its gradient receive, overlap=on)
  CHECK(rank1.find("rank 1: recv grad mb=0 from=3 bytes=32768 req=0\nrank 1: load mb=0 sequences=2 "
                   "tokens=128\n") == 0);
}

TEST_CASE("schedule JSON carries every rank's instructions") {
  const ModelSpec nano = load_model("gpt2-nano");
  const Schedule s = compile(nano, parse_plan("dp=2,pp=2,mb=2,zero=1"), 8, 32);
  nlohmann::json j = s;
  CHECK(j["world"] == 4);
  CHECK(j["plan"].get<Plan>() == s.plan);
  REQUIRE(j["ranks"].size() == 4);
  for (int r = 0; r < 4; ++r) CHECK(j["ranks"][r].size() == s.ranks[r].size());
  CHECK(j["ranks"][0][0]["op"] == "recv");  // the gradient receive, posted first
  CHECK(j["ranks"][0][0]["request"] == 0);
  CHECK(j["ranks"][0][1]["op"] == "load");
  CHECK(j["groups"].back()["kind"] == "world");
}

// A schedule too large to hold is refused before it is built.
TEST_CASE("a schedule past the instruction limit is refused before it is compiled") {
  const ModelSpec deep{"deep", 1024, 64, 4, 128, 256};
  const std::string message =
      test::error_of([&] { compile(deep, parse_plan("dp=512,tp=2,mb=16"), 8192, 16); });
  CHECK(message.find("its instruction count is") != std::string::npos);
  CHECK(message.find("fabtrain handles at most 16777216") != std::string::npos);
  CHECK(compile(load_model("gpt2-nano"), parse_plan("dp=2,tp=2,mb=2"), 8, 16).ranks.size() == 4);
}

TEST_CASE(
    "recomputation rebuilds one layer at a time, after the blocks behind it released theirs") {
  const ModelSpec m = load_model("gpt2");
  const int b = 4, s = 1024, L = m.n_layer;
  const Plan plan = parse_plan("dp=1,recompute=on,precision=fp16");
  auto kept = [&](int index, bool recompute) {
    return activation_bytes(m, block_at(m, index), b, s, 1, plan.precision, recompute,
                            plan.attention);
  };
  // Layer 0 is blocks 1 (attention) and 2 (MLP); every layer has the same shape.
  const double layer = kept(1, false) - kept(1, true) + kept(2, false) - kept(2, true);
  REQUIRE(layer > 0);
  // Blocks of layers only: the whole layer on top of what is kept.
  CHECK(backward_of(m, plan, b, s, 0, 1, 2 * L + 1).rebuilt_bytes == doctest::Approx(layer));
  // A range that starts with half a layer: the whole layer after it is the most; that half alone.
  CHECK(backward_of(m, plan, b, s, 0, 2, 5).rebuilt_bytes == doctest::Approx(layer));
  CHECK(backward_of(m, plan, b, s, 0, 2, 3).rebuilt_bytes ==
        doctest::Approx(kept(2, false) - kept(2, true)));
  // With the head in the range, its logits are gone before the last layer is rebuilt.
  const double head = kept(2 * L + 1, true);
  CHECK(backward_of(m, plan, b, s, 0, 0, 2 * L + 2).rebuilt_bytes ==
        doctest::Approx(std::max(0.0, layer - head)));
  // Without recomputation nothing is rebuilt.
  CHECK(backward_of(m, parse_plan("dp=1,precision=fp16"), b, s, 0, 1, 2 * L + 1).rebuilt_bytes ==
        0);
}
