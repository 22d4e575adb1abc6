// Plans: text and JSON forms, names, checks against a model and batch, layer split and placement.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "plan/plan.hpp"
#include "plan/schedule.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::contains;
using fabtrain::test::error_of;

TEST_CASE("plan text parses every key and prints back canonically") {
  const std::string text =
      "dp=2,tp=1,pp=2,mb=8,zero=1,schedule=gpipe,recompute=on,layers=10:14,precision=bf16,"
      "devices=3:2:1:0";
  const Plan plan = parse_plan(text);
  CHECK(plan.dp == 2);
  CHECK(plan.tp == 1);
  CHECK(plan.pp == 2);
  CHECK(plan.mb == 8);
  CHECK(plan.zero == 1);
  CHECK(plan.schedule == PipelineSchedule::gpipe);
  CHECK(plan.recompute);
  CHECK(plan.layers == std::vector<int>{10, 14});
  CHECK(plan.precision == Precision::bf16);
  CHECK(plan.devices == std::vector<int>{3, 2, 1, 0});
  CHECK(to_string(plan) == text);
  CHECK(parse_plan(to_string(plan)) == plan);

  // Keys in any order, spaces, defaults left out: the canonical form fills them in.
  const Plan short_form = parse_plan(" pp=2 , dp=4 ");
  CHECK(short_form.dp == 4);
  CHECK(short_form.pp == 2);
  CHECK(short_form.tp == 1);
  CHECK(to_string(short_form) ==
        "dp=4,tp=1,pp=2,mb=1,zero=0,schedule=1f1b,recompute=off,precision=fp32");
  CHECK(parse_plan(to_string(short_form)) == short_form);
  CHECK(parse_plan("") == Plan{});
}

TEST_CASE("plan JSON round trips and rejects what the text form rejects") {
  const Plan plan =
      parse_plan("dp=2,tp=2,pp=3,mb=4,zero=2,recompute=on,layers=4:4:4,precision=fp16");
  nlohmann::json j = plan;
  CHECK(j["schedule"] == "1f1b");
  CHECK(j["layers"] == nlohmann::json::array({4, 4, 4}));
  CHECK(j.get<Plan>() == plan);
  CHECK(nlohmann::json::parse(j.dump()).get<Plan>() == plan);

  CHECK(contains(error_of([] { nlohmann::json{{"dq", 2}}.get<Plan>(); }), "'dq'"));
  CHECK(contains(error_of([] { nlohmann::json{{"dp", "two"}}.get<Plan>(); }), "'two'"));
  CHECK(contains(error_of([] { nlohmann::json{{"dp", 1.5}}.get<Plan>(); }), "dp"));
  CHECK(contains(error_of([] { nlohmann::json{{"layers", {1, "x"}}}.get<Plan>(); }), "layers"));
  CHECK(contains(error_of([] { nlohmann::json{{"zero", 7}}.get<Plan>(); }), "zero"));
  CHECK(contains(error_of([] { nlohmann::json::array().get<Plan>(); }), "object"));
}

TEST_CASE("bad plan text names the key and the value") {
  struct Bad {
    const char* text;
    const char* key;
    const char* value;
  };
  const Bad cases[] = {
      {"dp=0", "dp", "0"},
      {"tp=x", "tp", "x"},
      {"pp=-1", "pp", "-1"},
      {"mb=2.5", "mb", "2.5"},
      {"mb=", "mb", "''"},
      {"zero=4", "zero", "4"},
      {"schedule=zigzag", "schedule", "zigzag"},
      {"recompute=maybe", "recompute", "maybe"},
      {"precision=fp8", "precision", "fp8"},
      {"layers=3::4", "layers", "3::4"},
      {"devices=0:a", "devices", "a"},
      {"foo=1", "foo", "foo"},
      {"dp=2,dp=3", "dp", "twice"},
      {"dp", "dp", "key=value"},
      {"dp=99999999999", "dp", "99999999999"},
  };
  for (const Bad& bad : cases) {
    INFO(bad.text);
    const std::string message = error_of([&] { parse_plan(bad.text); });
    CHECK(contains(message, bad.key));
    CHECK(contains(message, bad.value));
  }
}

TEST_CASE("technique names follow the study") {
  CHECK(technique_name(parse_plan("")) == "single GPU");
  CHECK(technique_name(parse_plan("dp=4")) == "data parallel");
  CHECK(technique_name(parse_plan("dp=4,zero=2")) == "ZeRO-2");
  CHECK(technique_name(parse_plan("dp=4,zero=3")) == "ZeRO-3");
  CHECK(technique_name(parse_plan("tp=4")) == "shard");
  CHECK(technique_name(parse_plan("dp=2,tp=2")) == "data parallel + shard");
  CHECK(technique_name(parse_plan("pp=2")) == "pipeshard");
  CHECK(technique_name(parse_plan("dp=2,tp=2,pp=2")) == "pipeshard");
}

TEST_CASE("validate names the field, the value and the rule") {
  const ModelSpec gpt2 = load_model("gpt2");  // 12 layers, 12 heads
  CHECK_NOTHROW(validate(parse_plan("dp=2,tp=4,pp=3,mb=4"), gpt2, 16));
  struct Bad {
    const char* plan;
    int batch;
    std::vector<const char*> parts;
  };
  const std::vector<Bad> cases = {
      {"tp=5", 8, {"tp=5", "12", "heads"}},
      {"pp=13", 8, {"pp=13", "12 layers"}},
      {"dp=2,mb=3", 8, {"8", "dp*mb", "6"}},
      {"", 0, {"batch 0"}},
      {"zero=2", 8, {"zero=2", "dp>1"}},
      {"pp=2,layers=5:5", 8, {"layers=5:5", "sums to 10", "12 layers"}},
      {"pp=2,layers=0:12", 8, {"layers=0:12", "stage 0", "at least 1"}},
      {"pp=3,layers=6:6", 8, {"layers=6:6", "pp=3"}},
      {"dp=4,devices=0:1", 8, {"devices=0:1", "4 ranks"}},
      {"dp=4,devices=0:1:1:2", 8, {"device 1", "twice"}},
      {"dp=2,devices=-1:0", 8, {"device -1", "negative"}},
  };
  for (const Bad& bad : cases) {
    INFO(bad.plan);
    const std::string message = error_of([&] { validate(parse_plan(bad.plan), gpt2, bad.batch); });
    REQUIRE(!message.empty());
    for (const char* part : bad.parts) CHECK_MESSAGE(contains(message, part), message);
  }
  Plan negative;
  negative.dp = -2;  // built in code, bypassing the parser
  CHECK(contains(error_of([&] { validate(negative, gpt2, 8); }), "dp=-2"));
  CHECK(contains(error_of([&] { compile(gpt2, Plan{}, 8, 2048); }), "seq=2048"));
}

TEST_CASE("layer split and stage block ranges") {
  const ModelSpec gpt2 = load_model("gpt2");
  CHECK(stage_layers(gpt2, parse_plan("pp=5")) == std::vector<int>{3, 3, 2, 2, 2});
  CHECK(stage_layers(gpt2, parse_plan("pp=2,layers=5:7")) == std::vector<int>{5, 7});

  const auto even = stage_blocks(gpt2, parse_plan("pp=2"));
  REQUIRE(even.size() == 2);
  CHECK(even[0].begin == 0);
  CHECK(even[0].end == first_block_of_layer(6));
  CHECK(even[1].begin == first_block_of_layer(6));
  CHECK(even[1].end == block_count(gpt2));

  const auto single = stage_blocks(gpt2, Plan{});
  REQUIRE(single.size() == 1);
  CHECK(single[0].begin == 0);
  CHECK(single[0].end == 2 * 12 + 2);

  // Contiguous cover of the block line, embedding first and head last.
  const auto uneven = stage_blocks(gpt2, parse_plan("pp=4,layers=1:2:4:5"));
  REQUIRE(uneven.size() == 4);
  for (std::size_t i = 1; i < uneven.size(); ++i) CHECK(uneven[i].begin == uneven[i - 1].end);
  CHECK(block_at(gpt2, uneven[1].begin).layer == 1);
  CHECK(block_at(gpt2, uneven[3].begin).layer == 7);
  CHECK(block_at(gpt2, uneven[3].end - 1).kind == BlockKind::head);
}

TEST_CASE("placement: tp innermost, then dp, then pp") {
  const Plan plan = parse_plan("dp=2,tp=2,pp=2");
  for (int rank = 0; rank < plan.ranks(); ++rank) {
    const RankCoord c = rank_coord(plan, rank);
    CHECK(rank == c.tp + plan.tp * (c.dp + plan.dp * c.pp));
    CHECK(rank_of(plan, c) == rank);
    CHECK(device_of(plan, rank) == rank);
  }
  const RankCoord five = rank_coord(plan, 5);
  CHECK(five.tp == 1);
  CHECK(five.dp == 0);
  CHECK(five.pp == 1);
  CHECK(tp_group(plan, 5) == std::vector<int>{4, 5});
  CHECK(dp_group(plan, 5) == std::vector<int>{5, 7});
  CHECK(tp_group(plan, 2) == std::vector<int>{2, 3});
  CHECK(dp_group(plan, 2) == std::vector<int>{0, 2});

  const Plan placed = parse_plan("dp=2,tp=2,pp=2,devices=7:6:5:4:3:2:1:0");
  CHECK(device_of(placed, 0) == 7);
  CHECK(device_of(placed, 5) == 2);
  CHECK(contains(error_of([&] { rank_coord(plan, 8); }), "rank 8"));
  CHECK(contains(error_of([&] { rank_of(plan, {2, 0, 0}); }), "dp=2"));
}

TEST_CASE("groups of a dp=2,tp=2,pp=2 schedule") {
  const ModelSpec nano = load_model("gpt2-nano");
  const Schedule s = compile(nano, parse_plan("dp=2,tp=2,pp=2,mb=2"), 8, 64);
  CHECK(s.world == 8);
  CHECK(s.microbatch == 2);
  const std::vector<std::vector<int>> expected = {
      {0, 1},
      {2, 3},
      {4, 5},
      {6, 7},  // tp groups per (dp, pp)
      {0, 2},
      {1, 3},
      {4, 6},
      {5, 7},  // dp groups per (tp, pp)
      {0, 4},
      {1, 5},
      {2, 6},
      {3, 7},                    // tied embedding per (dp, tp)
      {0, 1, 2, 3, 4, 5, 6, 7},  // world
  };
  CHECK(s.groups == expected);
  REQUIRE(s.group_kinds.size() == s.groups.size());
  CHECK(s.group_kinds[0] == GroupKind::tp);
  CHECK(s.group_kinds[4] == GroupKind::dp);
  CHECK(s.group_kinds[8] == GroupKind::tied_embedding);
  CHECK(s.group_kinds[12] == GroupKind::world);
  // A rank's group of each kind, as the executor looks it up.
  CHECK(s.group_of(5, GroupKind::tp) == 2);
  CHECK(s.group_of(5, GroupKind::dp) == 7);
  CHECK(s.group_of(5, GroupKind::tied_embedding) == 9);
  CHECK(s.group_of(5, GroupKind::world) == 12);
  const Schedule deep = compile(load_model("gpt2"), parse_plan("tp=2,pp=3,mb=3"), 3, 64);
  CHECK(deep.group_of(0, GroupKind::dp) == -1);              // dp = 1: no dp group
  CHECK(deep.group_of(2, GroupKind::tied_embedding) == -1);  // a middle stage
  CHECK(deep.group_of(0, GroupKind::tied_embedding) >= 0);

  // Every collective a rank plays is on a group of the matching kind that contains it.
  for (int r = 0; r < s.world; ++r)
    for (const auto& in : s.ranks[r])
      if (const auto* c = std::get_if<Collective>(&in)) {
        const auto& g = s.groups.at(c->group);
        CHECK(std::find(g.begin(), g.end(), r) != g.end());
        const GroupKind kind = s.group_kinds[c->group];
        if (c->purpose == Purpose::tp_forward || c->purpose == Purpose::tp_backward)
          CHECK(kind == GroupKind::tp);
        else if (c->purpose == Purpose::tied_embedding)
          CHECK(kind == GroupKind::tied_embedding);
        else if (c->purpose == Purpose::grad_norm)
          CHECK(kind == GroupKind::world);
        else
          CHECK(kind == GroupKind::dp);
      }

  // Only the groups a plan uses: a single GPU has just the world.
  const Schedule one = compile(nano, Plan{}, 4, 64);
  CHECK(one.groups == std::vector<std::vector<int>>{{0}});
}

TEST_CASE("the short form keeps what differs from the defaults and drops the devices") {
  CHECK(to_short_string(parse_plan("dp=2,devices=3:1")) == "dp=2,tp=1,pp=1,mb=1");
  CHECK(to_short_string(parse_plan("pp=2,mb=4,zero=0,schedule=gpipe,recompute=on,layers=1:1")) ==
        "dp=1,tp=1,pp=2,mb=4,schedule=gpipe,recompute=on,layers=1:1");
  CHECK(to_short_string(parse_plan("dp=4,zero=2,precision=bf16")) ==
        "dp=4,tp=1,pp=1,mb=1,zero=2,precision=bf16");
}

TEST_CASE("attention=flash parses, prints only when set, and reaches the compiled costs") {
  const Plan flash = parse_plan("dp=2,precision=bf16,attention=flash");
  CHECK(flash.attention == Attention::flash);
  CHECK(parse_plan(to_string(flash)) == flash);
  CHECK(to_string(flash).find("attention=flash") != std::string::npos);
  CHECK(to_string(parse_plan("dp=2")).find("attention") ==
        std::string::npos);  // naive: the default
  CHECK(to_short_string(flash).find(",attention=flash") != std::string::npos);
  nlohmann::json j = flash;
  CHECK(j.get<Plan>() == flash);
  CHECK_THROWS_WITH_AS(parse_plan("attention=fused"), doctest::Contains("attention"), Error);
  const ModelSpec m = load_model("gpt2");
  const Schedule naive_s = compile(m, parse_plan("dp=1,precision=bf16"), 4, 1024);
  const Schedule flash_s = compile(m, parse_plan("dp=1,precision=bf16,attention=flash"), 4, 1024);
  auto first_forward = [](const Schedule& s) {
    for (const auto& i : s.ranks[0])
      if (const auto* f = std::get_if<Forward>(&i)) return *f;
    FAIL("no Forward in rank 0's stream");
    return Forward{};
  };
  const Forward a = first_forward(naive_s), b = first_forward(flash_s);
  CHECK(a.flops == b.flops);
  CHECK(b.bytes < a.bytes);
  CHECK(b.activation_bytes < a.activation_bytes);
  // eager: the same products, more passes over the scores and more kernels than naive.
  const Plan eager = parse_plan("dp=1,precision=bf16,attention=eager");
  CHECK(parse_plan(to_string(eager)) == eager);
  CHECK(to_short_string(eager).find(",attention=eager") != std::string::npos);
  const Forward c = first_forward(compile(m, eager, 4, 1024));
  CHECK(c.flops == a.flops);
  CHECK(c.bytes > a.bytes);
  CHECK(c.kernels > a.kernels);
  CHECK(c.matmul_bytes == doctest::Approx(a.matmul_bytes).epsilon(1e-12));
}

// Degrees and counts within the limits, sums that cannot wrap.
TEST_CASE("plan degrees, microbatches and layer splits are bounded and strict") {
  CHECK(contains(error_of([] { parse_plan("dp=1000000"); }),
                 "plan key 'dp' is 1000000; fabtrain handles at most 1024"));
  CHECK(contains(error_of([] { parse_plan("dp=2147483647"); }), "plan key 'dp' is 2147483647"));
  CHECK(contains(error_of([] { parse_plan("dp=4294967298"); }), "4294967298 is out of range"));
  CHECK(contains(error_of([] { parse_plan("dp=64,tp=64"); }), "plan dp*tp*pp = 64*64*1 is 4096"));
  CHECK(contains(error_of([] { parse_plan("mb=100000"); }), "plan key 'mb' is 100000"));
  CHECK(contains(error_of([] { parse_plan("pp=2,layers=2147483647:-2147483645"); }),
                 "plan key 'layers': an entry is 2147483647"));
  CHECK(contains(error_of([] { parse_plan("dp=010"); }), "leading zero"));
  CHECK(contains(error_of([] { parse_plan("dp=+2"); }), "not an integer"));
  CHECK(contains(error_of([] { (void)nlohmann::json::parse(R"({"dp": 4294967298})").get<Plan>(); }),
                 "4294967298 is out of range"));
  CHECK(parse_plan("dp=16,tp=8,pp=8").ranks() == 1024);
}
