// Run record lines round-trip through to_json and the strict reader, and the reader refuses what
// the writer never writes.
#include <doctest/doctest.h>

#include "plan/run_record_format.hpp"
#include "plan/verb.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::error_of;

TEST_CASE("a run header round-trips, the mode's own fields included") {
  RunHeader h;
  h.model = load_model("gpt2-nano");
  h.plan = parse_plan("dp=2,pp=2,mb=2");
  h.world = 4;
  h.host = "vm1";
  h.cpu = "Xeon";
  h.mpi_version = "Open MPI v4";
  h.ranks_on_host = 2;
  h.device = "cpu";
  h.threads = 3;
  h.batch = 8, h.seq = 32, h.microbatch = 2, h.steps = 10, h.start_step = 4;
  h.extra = {{"lr", 0.001}, {"seed", 7}};
  const nlohmann::json j = to_json(h);
  CHECK(j["type"] == "header");
  CHECK(j["lr"] == 0.001);
  const RunHeader back = run_header_from_json(nlohmann::json::parse(j.dump()), "line 1", "r.jsonl");
  CHECK(back.plan == h.plan);
  CHECK(back.world == 4);
  CHECK(back.model.name == "gpt2-nano");
  CHECK(back.model.n_layer == h.model.n_layer);
  CHECK(back.model.vocab_size == h.model.vocab_size);
  CHECK(back.host == "vm1");
  CHECK(back.cpu == "Xeon");
  CHECK(back.mpi_version == "Open MPI v4");
  CHECK(back.ranks_on_host == 2);
  CHECK(back.device == "cpu");
  CHECK(back.threads == 3);
  CHECK(back.batch == 8);
  CHECK(back.seq == 32);
  CHECK(back.microbatch == 2);
  CHECK(back.steps == 10);
  CHECK(back.start_step == 4);
  CHECK(back.extra == nlohmann::json{{"lr", 0.001}, {"seed", 7}});
  CHECK(to_json(back) == j);
}

TEST_CASE("a run header is refused by name when its plan and world disagree") {
  auto read = [](const char* text) {
    return error_of(
        [&] { run_header_from_json(nlohmann::json::parse(text), "line 1", "r.jsonl"); });
  };
  CHECK(read(R"({"plan":"dp=4","world":2})") ==
        "r.jsonl: line 1: plan dp=4 has dp*tp*pp = 4 ranks but world=2");
  CHECK(read(R"({"plan":"dp=2"})").find("line 1 has no field 'world'") != std::string::npos);
  CHECK(read(R"({"plan":"dp=2","world":2,"batch":0})").find("batch") != std::string::npos);
}

TEST_CASE("a step line of a compiled schedule round-trips with every instruction") {
  const ModelSpec m = load_model("gpt2-nano");
  const Schedule s = compile(m, parse_plan("dp=2,pp=2,mb=2"), 8, 16);
  StepTimings timings(s.world);
  for (int r = 0; r < s.world; ++r)
    for (std::size_t i = 0; i < s.ranks[r].size(); ++i)
      timings[r].push_back({r * 1e-4 + i * 1e-3, 5e-4});
  const StepLine line = step_line({3, 0.25, 4.5f, 1e-3f, 0.75f, 1024.0, 4.25f}, s, timings);
  std::size_t total = 0;
  for (const auto& stream : s.ranks) total += stream.size();
  REQUIRE(line.instructions.size() == total);
  const StepLine back = step_line_from_json(nlohmann::json::parse(to_json(line).dump()), s.world,
                                            "line 2", "r.jsonl");
  CHECK(back.summary.step == 3);
  CHECK(back.summary.wall_s == 0.25);
  CHECK(back.summary.loss == 4.5f);
  CHECK(back.summary.val_loss == 4.25f);
  REQUIRE(back.instructions.size() == total);
  for (std::size_t i = 0; i < total; ++i) {
    const InstructionRecord &a = line.instructions[i], &b = back.instructions[i];
    CHECK(a.rank == b.rank);
    CHECK(a.index == b.index);
    CHECK(a.kind == b.kind);
    CHECK(a.communication == b.communication);
    CHECK(a.communication == is_communication(s.ranks[a.rank][a.index]));
    CHECK(a.name == b.name);
    CHECK(a.start_s == b.start_s);
    CHECK(a.duration_s == b.duration_s);
    CHECK(a.bytes == b.bytes);
    CHECK(a.flops == b.flops);
    CHECK(a.peers == b.peers);
  }
  CHECK(to_json(back) == to_json(line));
  // Ranks and peers beyond the header's world are refused by name (rank 0's peer 2 first).
  CHECK(error_of([&] {
          step_line_from_json(to_json(line), 2, "line 2", "r.jsonl");
        }).find("r.jsonl: line 2 instructions[") == 0);
  nlohmann::json one = to_json(line);
  one["instructions"] = nlohmann::json::array({one["instructions"].back()});  // rank 3's
  CHECK(error_of([&] {
          step_line_from_json(one, 2, "line 2", "r.jsonl");
        }).find("instructions[0].rank=3 but the header says world=2") != std::string::npos);
}

TEST_CASE("an instruction's comm flag: written always, read from the kind in older records") {
  const Schedule s = compile(load_model("gpt2-nano"), parse_plan("dp=2,overlap=off"), 8, 16);
  StepTimings timings(s.world);
  for (int r = 0; r < s.world; ++r) timings[r].assign(s.ranks[r].size(), {0.0, 1e-3});
  nlohmann::json j = to_json(step_line({0, 0.1, 4.0f, 1e-3f, 1.0f, 10.0, -1}, s, timings));
  int comm = 0;
  for (nlohmann::json& item : j["instructions"]) {
    REQUIRE(item["comm"].is_boolean());
    comm += item["comm"].get<bool>();
    CHECK(item["comm"] == (item["kind"] == "all_reduce"));  // the gradients' only, blocking
    item.erase("comm");
  }
  CHECK(comm >= 2);
  const StepLine older = step_line_from_json(j, s.world, "line 2", "r.jsonl");
  for (const InstructionRecord& r : older.instructions)
    CHECK(r.communication == (r.kind == "all_reduce"));
  j["instructions"][0]["kind"] = "compute";
  CHECK(error_of([&] { step_line_from_json(j, s.world, "line 2", "r.jsonl"); }) ==
        "r.jsonl: line 2 instructions[0].kind: 'compute' is not an instruction's verb");
  j["instructions"][0]["comm"] = "yes";
  CHECK(error_of([&] {
          step_line_from_json(j, s.world, "line 2", "r.jsonl");
        }).find("instructions[0].comm must be true or false") != std::string::npos);
}

TEST_CASE("a step line records the request of a start and of its wait") {
  const ModelSpec m = load_model("gpt2-nano");
  Schedule s = compile(m, parse_plan("dp=2,overlap=off"), 8, 16);
  for (auto& stream : s.ranks) {  // the gradients' all-reduce started, its wait at the end
    for (Instruction& in : stream)
      if (auto* c = std::get_if<Collective>(&in); c && c->purpose == Purpose::dp_gradients)
        c->request = 0;
    stream.push_back(Wait{0, Awaits::collective, 4.0});
  }
  StepTimings timings(s.world);
  for (int r = 0; r < s.world; ++r) timings[r].assign(s.ranks[r].size(), {0.0, 1e-3});
  const StepLine line = step_line({0, 0.1, 4.0f, 1e-3f, 1.0f, 10.0, -1}, s, timings);
  const StepLine back = step_line_from_json(nlohmann::json::parse(to_json(line).dump()), s.world,
                                            "line 2", "r.jsonl");
  int starts = 0, waits = 0, plain = 0;
  for (const InstructionRecord& r : back.instructions) {
    if (r.request == 0 && r.kind == "all_reduce") ++starts;
    if (r.request == 0 && r.kind == "wait") ++waits;
    if (r.request < 0) ++plain;
  }
  CHECK(starts == 2);
  CHECK(waits == 2);
  CHECK(plain == int(back.instructions.size()) - 4);
  CHECK(to_json(line)["instructions"][0].count("request") == 0);  // written only when >= 0
}

TEST_CASE("a step line carries each rank's peak resident set, one value per rank") {
  const ModelSpec m = load_model("gpt2-nano");
  const Schedule s = compile(m, parse_plan("dp=2"), 8, 16);
  StepSummary summary{1, 0.1, 4.0f, 1e-3f, 1.0f, 10.0, -1};
  summary.peak_rss_bytes = {512.0 * 1024 * 1024, 640.0 * 1024 * 1024};
  const StepLine line = step_line(summary, s, {});
  const nlohmann::json j = nlohmann::json::parse(to_json(line).dump());
  const StepLine back = step_line_from_json(j, s.world, "line 2", "r.jsonl");
  CHECK(back.summary.peak_rss_bytes == summary.peak_rss_bytes);
  CHECK(to_json(step_line({1, 0.1, 4.0f, 1e-3f, 1.0f, 10.0, -1}, s, {})).count("peak_rss_bytes") ==
        0);  // written only where measured
  CHECK(error_of([&] {
          step_line_from_json(j, 3, "line 2", "r.jsonl");
        }).find("peak_rss_bytes has 2 values but the header says world=3") != std::string::npos);
  nlohmann::json negative = j;
  negative["peak_rss_bytes"][1] = -1;
  CHECK(error_of([&] {
          step_line_from_json(negative, 2, "line 2", "r.jsonl");
        }).find("peak_rss_bytes[1] must be a number of bytes") != std::string::npos);
}

TEST_CASE("a run record file reads back whole; lines out of place are refused by line") {
  const Schedule s = compile(load_model("gpt2-nano"), parse_plan("dp=2"), 8, 16);
  RunHeader h;
  h.model = load_model("gpt2-nano");
  h.plan = s.plan;
  h.world = 2;
  h.extra = {{"mode", "replay"}};
  const std::string header = to_json(h).dump();
  const std::string step = to_json(step_line({0, 0.1, 4.0f, 1e-3f, 1.0f, 10.0, -1}, s, {})).dump();
  const test::TempDir dir("fabtrain-record");
  const RunRecordFile file =
      read_run_record_file(dir.write("r.jsonl", header + "\n" + step + "\n\n" + step + "\n"));
  CHECK(file.header.world == 2);
  CHECK(file.header_json["mode"] == "replay");
  REQUIRE(file.steps.size() == 2);
  CHECK(file.steps[1].summary.wall_s == 0.1);
  const auto refusal = [&](const std::string& text) {
    return error_of([&] { read_run_record_file(dir.write("bad.jsonl", text)); });
  };
  CHECK(refusal(step + "\n").find("bad.jsonl: line 1: a step before the header") == 0);
  CHECK(refusal(header + "\n" + header + "\n").find("line 2: a second header") !=
        std::string::npos);
  CHECK(refusal(header + "\n{\"type\":\"end\"}\n").find("line 2: unknown type 'end'") !=
        std::string::npos);
  CHECK(refusal("").find("no header line") != std::string::npos);
}
