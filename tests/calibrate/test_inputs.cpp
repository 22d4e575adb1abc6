// Bad bench files and run records are errors naming the file and the field.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "bench_doc.hpp"
#include "calibrate/inputs.hpp"
#include "common/error.hpp"
#include "plan/plan.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::error_of;

namespace {

std::string write_temp(const char* name, const std::string& text) {
  const auto path =
      (std::filesystem::temp_directory_path() / (std::string("fabtrain-calib-") + name)).string();
  std::ofstream(path) << text;
  return path;
}

const char* kHeader = R"({"type":"header","model":{"name":"gpt2-nano"},"plan":"dp=2","world":2})";
const char* kStep =
    R"({"type":"step","step":0,"wall_s":0.5,"loss":5.0,"lr":0.001,"grad_norm":1.0,"tokens_per_s":100,"instructions":[)"
    R"({"rank":0,"index":0,"kind":"fwd","name":"fwd mb=0 blocks=0:4 flops=1e9","start_s":0,"duration_s":0.1,"bytes":1e6,"peers":[],"flops":1e9},)"
    R"({"rank":1,"index":0,"kind":"all_reduce","name":"all_reduce","start_s":0.1,"duration_s":0.2,"bytes":1e6,"peers":[0]},)"
    R"({"rank":1,"index":1,"kind":"optimizer","name":"optimizer","start_s":0.3,"duration_s":0.05,"bytes":1e7,"peers":[],"flops":1e6}]})";

}  // namespace

TEST_CASE("a well-formed bench file and run record are read") {
  const auto b = calib::parse_bench(test::bench_doc(1e10, 1e10, {{0.001, 1e8}}), "ok.json");
  CHECK(b.gemm.size() == 15);
  CHECK(b.memory.size() == 3);
  REQUIRE(b.pairs.size() == 1);
  REQUIRE(b.pairs[0].message_latencies.size() == 1);
  CHECK(b.pairs[0].message_latencies[0].first == 32768);
  CHECK(b.pairs[0].message_latencies[0].second == doctest::Approx(0.0007));
  CHECK(b.hosts == std::vector<std::string>{"siteA", "siteB"});
  const auto run =
      calib::read_run_record(write_temp("ok.jsonl", std::string(kHeader) + "\n" + kStep + "\n"));
  CHECK(run.world == 2);
  CHECK(run.plan == to_string(parse_plan("dp=2")));  // the canonical form
  CHECK(run.steps[0].compute[1].kind == "opt");      // an older record's "optimizer"
  REQUIRE(run.steps.size() == 1);
  REQUIRE(run.steps[0].compute.size() == 2);
  CHECK(run.steps[0].compute[0].blocks == 4);
  CHECK(run.steps[0].communication_s[1] == doctest::Approx(0.2));
}

TEST_CASE("bench file: unknown keys, missing fields and wrong formats name the file and field") {
  auto doc = test::bench_doc(1e10, 1e10);
  doc["colour"] = "blue";
  CHECK(error_of([&] { calib::parse_bench(doc, "b.json"); }).find("b.json: unknown key 'colour'") ==
        0);
  doc = test::bench_doc(1e10, 1e10);
  doc["gemm"][2]["ranks"][0].erase("seconds");
  CHECK(error_of([&] {
          calib::parse_bench(doc, "b.json");
        }).find("gemm[2].ranks[0] has no field 'seconds'") != std::string::npos);
  doc = test::bench_doc(1e10, 1e10);
  doc["gemm"][0]["pass"] = "sideways";
  CHECK(error_of([&] { calib::parse_bench(doc, "b.json"); }).find("gemm[0].pass 'sideways'") !=
        std::string::npos);
  doc = test::bench_doc(1e10, 1e10);
  doc["format"] = "other";
  CHECK(error_of([&] { calib::parse_bench(doc, "b.json"); }).find("is not 'fabtrain-bench'") !=
        std::string::npos);
  doc = test::bench_doc(1e10, 1e10);
  doc["memory"][0]["bytes"] = "many";
  CHECK(error_of([&] {
          calib::parse_bench(doc, "b.json");
        }).find("memory[0].bytes is not a number") != std::string::npos);
  CHECK(error_of([] { calib::read_bench("/nonexistent/bench.json"); }).find("cannot read") !=
        std::string::npos);
  CHECK(error_of([] {
          calib::read_bench(write_temp("bad.json", "{not json"));
        }).find("not valid JSON") != std::string::npos);
}

TEST_CASE("run record: bad lines name the file, the line and the field") {
  const std::string h = std::string(kHeader) + "\n";
  CHECK(error_of([&] {
          calib::read_run_record(write_temp("r1.jsonl", std::string(kStep) + "\n"));
        }).find("line 1: a step before the header") != std::string::npos);
  CHECK(error_of([&] {
          calib::read_run_record(write_temp("r2.jsonl", h + R"({"type":"mystery"})"));
        }).find("line 2: unknown type 'mystery'") != std::string::npos);
  std::string bad = kStep;
  bad.replace(bad.find("\"peers\":[]"), 10, "\"peers\":[],\"colour\":1");
  CHECK(error_of([&] {
          calib::read_run_record(write_temp("r3.jsonl", h + bad));
        }).find("unknown key 'colour' in line 2 instructions[0]") != std::string::npos);
  CHECK(error_of([&] {
          calib::read_run_record(write_temp("r4.jsonl", h));
        }).find("no step carries") != std::string::npos);
  std::string no_blocks = kStep;
  no_blocks.replace(no_blocks.find("blocks=0:4"), 10, "blocks?");
  CHECK(error_of([&] {
          calib::read_run_record(write_temp("r5.jsonl", h + no_blocks));
        }).find("has no blocks=BEGIN:END") != std::string::npos);
  CHECK(error_of([&] {
          calib::read_run_record(write_temp("r6.jsonl", h + "{oops"));
        }).find("line 2: not valid JSON") != std::string::npos);
}

// A rank chosen by the file indexed per-rank arrays after a cast to int.
TEST_CASE("run record: a rank that is not a whole number within the world is refused") {
  const std::string h = std::string(kHeader) + "\n";
  for (const char* rank : {"1e300", "3e9", "3000000000", "-1", "0.5"}) {
    CAPTURE(rank);
    std::string step = kStep;
    step.replace(step.find("\"rank\":1,"), 9, std::string("\"rank\":") + rank + ",");
    const std::string message =
        error_of([&] { calib::read_run_record(write_temp("rank.jsonl", h + step)); });
    CHECK(message.find("instructions[1].rank") != std::string::npos);
  }
  std::string step = kStep;
  step.replace(step.find("\"rank\":1,"), 9, "\"rank\":2,");
  CHECK(error_of([&] {
          calib::read_run_record(write_temp("rank2.jsonl", h + step));
        }).find("rank=2 but the header says world=2") != std::string::npos);
}

// The header, the bench and the names are cross-checked.
TEST_CASE("run record: the header's world, plan and block names are checked against each other") {
  auto header = [](const std::string& plan, const std::string& world) {
    return R"({"type":"header","model":{"name":"gpt2-nano"},"plan":")" + plan + R"(","world":)" +
           world + "}\n";
  };
  auto read = [](const std::string& text) {
    return error_of([&] { calib::read_run_record(write_temp("h.jsonl", text)); });
  };
  CHECK(read(header("dp=2", "1e300") + kStep).find("world: 1e+300 is not an integer") !=
        std::string::npos);
  CHECK(read(header("dp=2", "5000") + kStep).find("world is 5000; fabtrain handles at most 1024") !=
        std::string::npos);
  CHECK(read(header("dp=0", "2") + kStep).find("plan key 'dp': 0 must be at least 1") !=
        std::string::npos);
  CHECK(read(header("dp=4", "2") + kStep).find("plan dp=4 has dp*tp*pp = 4 ranks but world=2") !=
        std::string::npos);
  std::string step = kStep;
  step.replace(step.find("blocks=0:4"), 10, "blocks=0:99999999999");
  CHECK(read(header("dp=2", "2") + step).find("'99999999999' ") == std::string::npos);
  CHECK(read(header("dp=2", "2") + step).find("99999999999 is out of range") != std::string::npos);
  step = kStep;
  step.replace(step.find("blocks=0:4"), 10, "blocks=4:4");
  CHECK(read(header("dp=2", "2") + step).find("blocks=4:4 is empty") != std::string::npos);
  CHECK(read(std::string(R"({"type":"header","plan":"dp=2","world":2,"world":3})") + "\n" + kStep)
            .find("key 'world' appears twice") != std::string::npos);
}

TEST_CASE("bench file: world, ranks and collective names are checked") {
  auto doc = test::bench_doc(1e10, 1e10);
  doc["world"] = 1e300;
  CHECK(error_of([&] {
          calib::parse_bench(doc, "b.json");
        }).find("world: 1e+300 is not an integer") != std::string::npos);
  doc = test::bench_doc(1e10, 1e10);
  doc["world"] = 3;
  CHECK(error_of([&] {
          calib::parse_bench(doc, "b.json");
        }).find("hosts lists 2 hosts but world=3") != std::string::npos);
  doc = test::bench_doc(1e10, 1e10);
  REQUIRE(!doc["collectives"].empty());
  doc["collectives"][0]["op"] = "broadcast";
  CHECK(error_of([&] {
          calib::parse_bench(doc, "b.json");
        }).find("'broadcast' is not all_reduce") != std::string::npos);
  doc = test::bench_doc(1e10, 1e10);
  doc["collectives"][0]["ranks"] = 9;
  CHECK(error_of([&] {
          calib::parse_bench(doc, "b.json");
        }).find("ranks: 9 is out of range [1, 2]") != std::string::npos);
  doc = test::bench_doc(1e10, 1e10, {{0.001, 1e8}});
  doc["p2p"][0]["b"] = 7;
  CHECK(error_of([&] {
          calib::parse_bench(doc, "b.json");
        }).find("p2p[0].b: 7 is out of range [0, 1]") != std::string::npos);
}
