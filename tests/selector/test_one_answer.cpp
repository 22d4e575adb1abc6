// One answer a user can act on: one objective ranks the search, the winner says why
// it wins against each other technique, break-even round trips are where the winner really
// changes, the launch line places ranks and marks what fabtrain-exec cannot run, and time to
// train defaults to the study's amount.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "plan/executor_support.hpp"
#include "selector/break_even.hpp"
#include "selector/launch_line.hpp"
#include "selector/recommend.hpp"
#include "selector/rule_vs_search.hpp"
#include "selector/study_training.hpp"
#include "selector/why_it_wins.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

double cost(const Evaluated& e, Objective o) {
  return objective_weight(o, e.candidate.plan.ranks()) / e.tokens_per_s;
}

SearchOptions with(Objective objective, int keep_top = 0) {
  SearchOptions o;
  o.objective = objective;
  o.keep_top = keep_top;
  o.train_tokens = 1e8;
  return o;
}

}  // namespace

TEST_CASE("each objective ranks by its own cost, and gpu-hours prefers fewer GPUs") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  Slice near = slice;
  override_wan_latency(near, 0.001);  // 1 ms: four GPUs are the fastest
  std::map<Objective, Evaluated> best;
  for (Objective o : {Objective::time_to_train, Objective::tokens_per_s, Objective::gpu_hours}) {
    const SearchOptions options = with(o, 5);
    const SearchResult r = search(model, near, options);
    REQUIRE(r.ranked.size() >= 5);
    // A tight plan ranks by its cost raised by the tolerance (search.hpp, ranking_cost).
    for (size_t i = 1; i < r.ranked.size(); ++i)
      CHECK(ranking_cost(r.ranked[i - 1], cost(r.ranked[i - 1], o), options) <=
            ranking_cost(r.ranked[i], cost(r.ranked[i], o), options));
    for (const auto& e : r.ranked) {
      CHECK(e.time_to_train_s == doctest::Approx(1e8 / e.tokens_per_s));
      // the critical rank's split: no term negative, none above the step
      CHECK(e.compute_s > 0);
      CHECK(e.exposed_comm_s >= 0);
      CHECK(e.bubble_s >= 0);
      CHECK(e.compute_s + e.exposed_comm_s + e.bubble_s <= e.step_time_s * 1.001);
    }
    best[o] = r.ranked.front();
  }
  CHECK(to_string(best[Objective::time_to_train].candidate.plan) ==
        to_string(best[Objective::tokens_per_s].candidate.plan));
  CHECK(best[Objective::time_to_train].candidate.plan.ranks() == 4);
  CHECK(best[Objective::gpu_hours].candidate.plan.ranks() < 4);
  // The gpu-hours winner is exact: the least of every GPU set's exact best (keep_top = 0; within
  // one set GPU-hours order as time does).
  const SearchResult per_set = search(model, near, with(Objective::time_to_train, 0));
  double least = 1e300;
  for (const auto& e : per_set.ranked) least = std::min(least, cost(e, Objective::gpu_hours));
  CHECK(cost(best[Objective::gpu_hours], Objective::gpu_hours) == doctest::Approx(least));
  CHECK_THROWS_WITH_AS(parse_objective("speed"), doctest::Contains("--objective speed"), Error);
}

TEST_CASE(
    "why the winner wins: one search keeps each family's best, the same as a search of that family "
    "alone") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  SearchOptions options = with(Objective::time_to_train, 1);
  const SearchResult plain = search(model, slice, options);
  options.best_of_each_family = true;
  const SearchResult r = search(model, slice, options);
  REQUIRE(!r.ranked.empty());
  // Keeping the families exact does not change the winner.
  CHECK(to_string(r.ranked.front().candidate.plan) ==
        to_string(plain.ranked.front().candidate.plan));
  const WinnerExplanation why = explain_winner(r, options);
  CHECK(why.winner.find(to_string(family_of(r.ranked.front().candidate.plan))) == 0);
  REQUIRE(why.rivals.size() == 3);
  REQUIRE(why.lines.size() == 3);
  for (const Rival& rival : why.rivals) {
    CHECK(rival.family != family_of(r.ranked.front().candidate.plan));
    REQUIRE(rival.best);
    CHECK(family_of(rival.best->candidate.plan) == rival.family);
    CHECK(rival.cost_ratio >= 1 - 1e-12);
    // its best is what a search over the family's plans alone finds
    SearchOptions alone = with(Objective::time_to_train, 1);
    alone.only = [f = rival.family](const Plan& p) { return family_of(p) == f; };
    const SearchResult own = search(model, slice, alone);
    REQUIRE(!own.ranked.empty());
    CHECK(cost(*rival.best, options.objective) ==
          doctest::Approx(cost(own.ranked.front(), options.objective)));
  }
  // Data parallel over 103 ms is dominated by its exposed communication, whatever wins.
  const Rival* dp = nullptr;
  for (const auto& rv : why.rivals)
    if (rv.family == Family::data_parallel) dp = &rv;
  if (dp && dp->best->candidate.subset.sites.size() > 1)
    CHECK(dominant_term(*dp->best).find("exposed communication") == 0);
}

TEST_CASE("why the winner wins: a plan on one GPU is a single GPU, as winner and as rival") {
  test::TempDir dir("fabtrain-single-gpu");
  const ModelSpec model = load_model("gpt2-nano");
  const Slice slice = load_slice(dir.write("two.yaml",
                                           "name: two\nvms:\n"
                                           "  - {name: vm, site: UTAH, gpu: GPU_RTX6000, gpus: 2, "
                                           "nic: NIC_Basic}\nnetworks: []\n"));
  SearchOptions options = with(Objective::gpu_hours);  // one GPU has no communication to pay
  options.best_of_each_family = true;
  const SearchResult r = search(model, slice, options);
  REQUIRE(!r.ranked.empty());
  REQUIRE(r.ranked.front().candidate.plan.ranks() == 1);
  const WinnerExplanation why = explain_winner(r, options);
  CHECK(why.winner.find("single GPU wins") == 0);
  bool data_parallel_on_two = false;
  for (const auto& line : why.lines) {
    CHECK(!test::contains(line, "on 1 GPU)"));  // the single GPU is the winner, not a rival
    data_parallel_on_two = data_parallel_on_two || line.find("best data parallel (dp=2") == 0;
  }
  CHECK(data_parallel_on_two);
}

TEST_CASE("why the winner wins: a family with no plan in the space is named, not compared") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  SearchOptions options = with(Objective::time_to_train, 1);
  options.best_of_each_family = true;
  options.only = [](const Plan& p) { return family_of(p) != Family::shard; };
  const SearchResult r = search(model, slice, options);
  REQUIRE(!r.ranked.empty());
  CHECK(r.enumerated_by_family[std::size_t(Family::shard)] == 0);
  const WinnerExplanation why = explain_winner(r, options);
  bool named = false;
  for (const auto& line : why.lines) named = named || line == "shard: no plan in the space";
  CHECK(named);
}

TEST_CASE(
    "break-even: on each side of a reported round trip the search's winner is the one named") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  const SearchOptions options = with(Objective::time_to_train, 1);
  const auto evens = break_evens(model, slice, options);
  REQUIRE(evens.size() == 1);
  const PairBreakEvens& p = evens[0];
  CHECK(p.rtt_ms == doctest::Approx(103));
  REQUIRE(!p.changes.empty());  // at 0.1 ms four GPUs over both sites win, at 103 ms two of one
  auto winner_at = [&](double ms) {
    Slice s = slice;
    override_pair_latency(s, "UTAH", "AMST", ms / 1e3);
    return winner_name(s, search(model, s, options).ranked.front());
  };
  for (const auto& c : p.changes) {
    CHECK(c.below != c.above);
    CHECK(winner_at(c.rtt_ms / 1.06) == c.below);
    CHECK(winner_at(c.rtt_ms * 1.06) == c.above);
  }
  CHECK(p.changes.front().below.find("over UTAH+AMST") != std::string::npos);
  CHECK(p.sentence.find("UTAH-AMST at 103 ms") == 0);
}

TEST_CASE("a search asked for the answer only names the full search's winner, simulating less") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  int fewer = 0;
  for (double ms : {0.5, 5.0, 30.0, 64.0, 103.0}) {
    CAPTURE(ms);
    Slice what_if = slice;
    override_pair_latency(what_if, "UTAH", "AMST", ms / 1e3);
    const SearchOptions full = with(Objective::time_to_train, 1);
    SearchOptions answer_only = full;
    answer_only.answer_of = [&](const Candidate& c) {
      Evaluated e;
      e.candidate = c;
      return winner_name(what_if, e);
    };
    const SearchResult a = search(model, what_if, full), b = search(model, what_if, answer_only);
    REQUIRE(!a.ranked.empty());
    REQUIRE(!b.ranked.empty());
    CHECK(winner_name(what_if, b.ranked.front()) == winner_name(what_if, a.ranked.front()));
    CHECK(b.simulated <= a.simulated);
    fewer += b.simulated < a.simulated;
  }
  CHECK(fewer >= 1);
}

TEST_CASE(
    "break-even: no plan spanning the pair runs faster at a longer round trip, beyond the slack") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  SearchOptions options = with(Objective::time_to_train, 1);
  options.memory_headroom = 0;
  const std::vector<std::string> plans = {"dp=4,mb=8",
                                          "dp=4,mb=8,zero=1",
                                          "dp=4,mb=8,zero=3",
                                          "dp=4,mb=8,overlap=off",
                                          "dp=2,pp=2,mb=16,schedule=1f1b",
                                          "dp=2,pp=2,mb=16,schedule=gpipe,recompute=on",
                                          "pp=4,mb=16",
                                          "dp=2,tp=2,mb=8"};
  const std::vector<double> rtts_ms = {0.1, 1, 3, 10, 30, 60, 103, 300};
  double worst_gain = 0;  // the largest fraction by which a longer round trip was faster
  for (const std::string& text : plans) {
    Candidate c;
    c.plan = parse_plan(text + ",devices=0:1:2:3");
    c.global_batch = 32;
    c.subset.gpus = {0, 1, 2, 3};
    double shorter = 0;
    for (double ms : rtts_ms) {
      Slice what_if = slice;
      override_pair_latency(what_if, "UTAH", "AMST", ms / 1e3);
      const SearchResult r = evaluate(model, what_if, {c}, options);
      INFO(text << " at " << ms << " ms");
      REQUIRE(r.ranked.size() == 1);
      const double step = r.ranked[0].step_time_s;
      if (shorter > 0) worst_gain = std::max(worst_gain, 1 - step / shorter);
      CHECK(step >= shorter * (1 - kShorterRoundTripSlack));
      shorter = step;
    }
  }
  MESSAGE("largest gain from a longer round trip: " << worst_gain);
}

TEST_CASE(
    "the launch line places ranks on VMs in device order, keeps the model path, asks for cuda") {
  const Slice slice = load_slice("utah-amst");
  Evaluated e;
  e.candidate.plan = parse_plan("dp=2,pp=2,mb=8,devices=0:1:2:3");
  e.candidate.global_batch = 32;
  LaunchLine l = launch_line("my models/config.json", slice, e, 1024);
  CHECK(l.command.find("mpirun -np 4 --host utah-vm:2,amst-vm:2 ") == 0);
  CHECK(l.command.find(" fabtrain-exec train ") != std::string::npos);
  CHECK(l.command.find("--model 'my models/config.json'") != std::string::npos);
  CHECK(l.command.find("--device cuda") != std::string::npos);
  CHECK(l.command.find("--batch 32 --seq 1024") != std::string::npos);
  CHECK(l.rank_vms == std::vector<std::string>{"utah-vm", "utah-vm", "amst-vm", "amst-vm"});
  CHECK(l.simulate_only.empty());
  // Ranks alternating between the VMs: the sequential mapper, one host per rank.
  e.candidate.plan = parse_plan("dp=4,devices=0:2:1:3");
  l = launch_line("gpt2-medium", slice, e, 1024);
  CHECK(l.command.find("--mca rmaps seq --host utah-vm,amst-vm,utah-vm,amst-vm") !=
        std::string::npos);
  // What fabtrain-exec cannot run is marked, with the reason.
  e.candidate.plan = parse_plan("dp=2,attention=flash");
  CHECK(launch_line("gpt2-medium", slice, e, 1024).simulate_only.find("attention=flash") !=
        std::string::npos);
  e.candidate.plan = parse_plan("dp=2,precision=fp16");
  l = launch_line("gpt2-medium", slice, e, 1024);
  CHECK(l.simulate_only.empty());
  CHECK(l.command.find("--device cuda --precision fp16") != std::string::npos);
  e.candidate.plan = parse_plan("dp=2,precision=tf32");
  CHECK(launch_line("gpt2-medium", slice, e, 1024).command.find("--device cuda --precision tf32") !=
        std::string::npos);
  CHECK(why_not_runnable(e.candidate.plan, ExecutorDevice::cpu).value_or("").find("tf32") !=
        std::string::npos);
  CHECK_FALSE(why_not_runnable(e.candidate.plan, ExecutorDevice::cuda));
  CHECK_FALSE(
      why_not_runnable(parse_plan("dp=2,pp=2,zero=3,mb=4,recompute=on"), ExecutorDevice::cpu));
  CHECK(why_not_runnable(parse_plan("dp=1,attention=flash"), ExecutorDevice::cuda));
  // A CPU slice: no --device flag (cpu is the executor's default).
  const Slice cpu = load_slice("emulated-2site");
  e.candidate.plan = parse_plan("dp=2");
  l = launch_line("gpt2-nano", cpu, e, 64);
  CHECK(l.device == "cpu");
  CHECK(l.command.find("--device") == std::string::npos);
  CHECK(l.command.find("--host siteA:1,siteB:1") != std::string::npos);
}

TEST_CASE("time to train defaults to the study's 20 epochs of a stated data set size") {
  const StudyTraining t = builtin_study_training();
  CHECK(t.epochs == 20);
  CHECK(t.dataset_tokens > 0);
  CHECK(t.dataset_tokens_source.find("assumption") != std::string::npos);
  test::TempDir dir("fabtrain-study-training");
  const std::string extra = dir.write(
      "extra.yaml",
      "epochs: 20\nepochs_source: x\ndataset_tokens: 1e6\ndataset_tokens_source: y\nsize: 3\n");
  CHECK(test::error_of([&] { load_study_training(extra); }).find("size") != std::string::npos);
  const std::string zero = dir.write(
      "zero.yaml", "epochs: 0\nepochs_source: x\ndataset_tokens: 1e6\ndataset_tokens_source: y\n");
  CHECK(test::error_of([&] { load_study_training(zero); }).find("epochs must be positive") !=
        std::string::npos);
}

TEST_CASE(
    "recommend under gpu-hours: the fewest GPU-hours within the tolerance, the reason says so") {
  const ModelSpec model = load_model("gpt2-medium");
  Slice slice = load_slice("utah-amst");
  override_wan_latency(slice, 0.001);
  const SearchResult r = search(model, slice, with(Objective::gpu_hours));
  const Recommendation rec = recommend(r, slice, 1e8, 0.1, Objective::gpu_hours);
  REQUIRE(rec.chosen >= 0);
  double least = 1e300;
  for (const auto& c : rec.choices) least = std::min(least, c.gpu_hours);
  CHECK(rec.choices[rec.chosen].gpu_hours <= least / 0.9 * (1 + 1e-12));
  CHECK(rec.why.find("GPU-hours") != std::string::npos);
}

TEST_CASE("the study's procedure next to the search: one sentence that agrees or says why not") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  const SearchOptions options = with(Objective::time_to_train, 1);
  const RuleDecision d = study_rule(model, slice, options);
  REQUIRE(d.found);
  const SearchResult r = search(model, slice, options);
  const std::string s = rule_vs_search(slice, d, r.ranked.front(), r.enumerated, options.objective);
  if (to_string(d.chosen.candidate.plan) == to_string(r.ranked.front().candidate.plan))
    CHECK(s.find("agree") != std::string::npos);
  else
    CHECK(s.find(std::to_string(r.enumerated) + " plans") != std::string::npos);
  // the search is never worse than the rule under its own objective
  CHECK(cost(r.ranked.front(), options.objective) <=
        cost(d.chosen, options.objective) * (1 + 1e-12));
}
