// Overlap's plan keys and instructions: overlap=on|off and bucket_mib=N parse, print
// only when not the default and are refused by name; starts print " req=N", waits their own line,
// and both go to JSON; gradient buckets walk a stage backward and cover it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "plan/buckets.hpp"
#include "plan/schedule.hpp"
#include "plan/verb.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::contains;
using fabtrain::test::error_of;

TEST_CASE("overlap and bucket_mib: defaults print nothing, other values round trip") {
  const Plan defaults = parse_plan("dp=2");
  CHECK(defaults.overlap);
  CHECK(defaults.bucket_mib == 25);
  CHECK(to_string(defaults) ==
        "dp=2,tp=1,pp=1,mb=1,zero=0,schedule=1f1b,recompute=off,precision=fp32");
  CHECK(to_short_string(defaults) == "dp=2,tp=1,pp=1,mb=1");
  nlohmann::json j = defaults;
  CHECK_FALSE(j.contains("overlap"));
  CHECK_FALSE(j.contains("bucket_mib"));

  const Plan p = parse_plan("dp=2,overlap=off,bucket_mib=50");
  CHECK_FALSE(p.overlap);
  CHECK(p.bucket_mib == 50);
  CHECK(contains(to_string(p), ",overlap=off,bucket_mib=50"));
  CHECK(parse_plan(to_string(p)) == p);
  CHECK(contains(to_short_string(p), ",overlap=off,bucket_mib=50"));
  j = p;
  CHECK(j["overlap"] == false);
  CHECK(j["bucket_mib"] == 50);
  CHECK(j.get<Plan>() == p);
  CHECK(parse_plan("overlap=on") == Plan{});
  CHECK(parse_plan("bucket_mib=25") == Plan{});
}

TEST_CASE("bad overlap and bucket_mib values are refused by name") {
  CHECK(contains(error_of([] { parse_plan("bucket_mib=0"); }), "plan key 'bucket_mib'"));
  CHECK(contains(error_of([] { parse_plan("bucket_mib=0"); }), "at least 1"));
  CHECK(contains(error_of([] { parse_plan("bucket_mib=-5"); }), "plan key 'bucket_mib'"));
  CHECK(contains(error_of([] { parse_plan("bucket_mib=2.5"); }), "plan key 'bucket_mib'"));
  CHECK(contains(error_of([] { parse_plan("bucket_mib=lots"); }), "plan key 'bucket_mib'"));
  CHECK(contains(error_of([] { parse_plan("overlap=maybe"); }), "plan key 'overlap'"));
  CHECK(contains(error_of([] { nlohmann::json{{"bucket_mib", 0}}.get<Plan>(); }), "bucket_mib"));

  const ModelSpec nano = load_model("gpt2-nano");  // about 0.5 MiB of fp32 parameters
  const std::string big = error_of([&] { validate(parse_plan("dp=2,bucket_mib=26"), nano, 8); });
  CHECK(contains(big, "bucket_mib=26 is larger than"));
  CHECK(contains(big, "gpt2-nano"));
  // The default stays valid on a model smaller than it: one bucket, as DDP makes it.
  CHECK_NOTHROW(validate(parse_plan("dp=2"), nano, 8));
  Plan zero_bucket = parse_plan("dp=2");
  zero_bucket.bucket_mib = 0;  // only a program can build it; validate still names it
  CHECK(contains(error_of([&] { validate(zero_bucket, nano, 8); }), "bucket_mib=0"));
}

TEST_CASE("starts print req=N, waits their own line; both in JSON") {
  Collective c{CollectiveOp::all_reduce, Purpose::dp_gradients, 1, 1024};
  c.request = 3;
  c.begin = 4;
  c.end = 6;
  CHECK(to_string(Instruction(c)) == "all_reduce dp_gradients group=1 bytes=1024 blocks=4:6 req=3");
  Collective blocking{CollectiveOp::all_reduce, Purpose::dp_gradients, 1, 1024};
  CHECK(to_string(Instruction(blocking)) == "all_reduce dp_gradients group=1 bytes=1024");
  Send s{Tensor::activation, 2, 5, 64};
  s.request = 0;
  CHECK(to_string(Instruction(s)) == "send act mb=2 to=5 bytes=64 req=0");
  Recv r{Tensor::gradient, 1, 4, 64};
  r.request = 1;
  CHECK(to_string(Instruction(r)) == "recv grad mb=1 from=4 bytes=64 req=1");

  const Wait w{3, Awaits::collective, 1024, CollectiveOp::all_reduce, Purpose::dp_gradients};
  CHECK(to_string(Instruction(w)) == "wait req=3 collective all_reduce dp_gradients bytes=1024");
  const Wait ws{0, Awaits::send, 64};
  CHECK(to_string(Instruction(ws)) == "wait req=0 send bytes=64");
  CHECK(std::string(verb(Instruction(w))) == "wait");
  CHECK(is_communication(Instruction(w)));

  nlohmann::json j;
  to_json(j, Instruction(c));
  CHECK(j["request"] == 3);
  CHECK(j["begin"] == 4);
  CHECK(j["end"] == 6);
  to_json(j, Instruction(blocking));
  CHECK_FALSE(j.contains("request"));
  CHECK_FALSE(j.contains("begin"));
  to_json(j, Instruction(w));
  CHECK(j["op"] == "wait");
  CHECK(j["request"] == 3);
  CHECK(j["what"] == "collective");
  CHECK(j["purpose"] == "dp_gradients");
  to_json(j, Instruction(s));
  CHECK(j["request"] == 0);
}

TEST_CASE("gradient buckets walk each stage backward, reach bucket_mib and cover the stage") {
  const ModelSpec gpt2 = load_model("gpt2");  // 124M parameters, about 475 MiB in fp32
  for (const char* text : {"dp=2", "dp=2,bucket_mib=100", "dp=2,pp=2", "dp=2,tp=2,pp=3",
                           "dp=2,pp=2,bucket_mib=1", "dp=2,precision=bf16"}) {
    CAPTURE(text);
    const Plan plan = parse_plan(text);
    const auto stages = stage_blocks(gpt2, plan);
    const double cap = double(plan.bucket_mib) * (1 << 20);
    const double e = element_bytes(plan.precision);
    for (int stage = 0; stage < plan.pp; ++stage) {
      const auto buckets = gradient_buckets(gpt2, plan, stage);
      REQUIRE_FALSE(buckets.empty());
      CHECK(buckets.front().end == stages[stage].end);  // the last blocks first
      CHECK(buckets.back().begin == stages[stage].begin);
      double sum = 0;
      for (std::size_t i = 0; i < buckets.size(); ++i) {
        CHECK(buckets[i].begin < buckets[i].end);
        if (i > 0) CHECK(buckets[i].end == buckets[i - 1].begin);  // consecutive, backward
        const double bytes = bucket_parameters(gpt2, plan, stage, buckets[i]) * e;
        if (i + 1 < buckets.size()) {
          CHECK(bytes >= cap);  // each full bucket reaches the cap...
          // ...and would not have without its first block
          if (buckets[i].end - buckets[i].begin > 1)
            CHECK(bucket_parameters(gpt2, plan, stage, {buckets[i].begin + 1, buckets[i].end}) * e <
                  cap);
        }
        sum += bytes;
      }
      CHECK(sum == doctest::Approx(stage_parameters(gpt2, plan, stage) * e));
    }
    // Never a function of overlap.
    Plan off = plan;
    off.overlap = false;
    for (int stage = 0; stage < plan.pp; ++stage) {
      const auto a = gradient_buckets(gpt2, plan, stage), b = gradient_buckets(gpt2, off, stage);
      REQUIRE(a.size() == b.size());
      for (std::size_t i = 0; i < a.size(); ++i)
        CHECK((a[i].begin == b[i].begin && a[i].end == b[i].end));
    }
  }
  // A bucket as big as the stage: one bucket.
  CHECK(gradient_buckets(load_model("gpt2-nano"), parse_plan("dp=2"), 0).size() == 1);
  CHECK(gradient_buckets(gpt2, parse_plan("dp=2"), 0).size() > 5);
}
