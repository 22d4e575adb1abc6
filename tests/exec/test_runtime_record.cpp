// Run records and traces: every instruction of a compiled schedule gets a kind, bytes or FLOPs
// and its peers; the JSON lines and the Chrome trace parse back with the expected fields.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "exec/run/run_record.hpp"
#include "models/model_spec.hpp"
#include "plan/schedule.hpp"

using namespace fabtrain;
namespace fs = std::filesystem;

TEST_CASE("run record lines and the Chrome trace describe every instruction") {
  const ModelSpec m = load_model("gpt2-nano");
  const Schedule s = compile(m, parse_plan("dp=2,pp=2,mb=2"), 8, 32);
  StepTimings timings(s.world);
  for (int r = 0; r < s.world; ++r)
    for (std::size_t i = 0; i < s.ranks[r].size(); ++i) timings[r].push_back({i * 1e-3, 5e-4});
  const fs::path dir =
      fs::temp_directory_path() / ("fabtrain_record_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    RunRecord record((dir / "run.jsonl").string());
    record.header({{"model", "gpt2-nano"}});
    record.step({0, 0.5, 3.25f, 1e-3f, 0.9f, 2048.0}, s, timings);
  }
  std::ifstream in(dir / "run.jsonl");
  std::string line;
  std::getline(in, line);
  CHECK(nlohmann::json::parse(line)["type"] == "header");
  std::getline(in, line);
  const auto step = nlohmann::json::parse(line);
  CHECK(step["loss"].get<float>() == 3.25f);
  std::size_t total = 0;
  for (const auto& r : s.ranks) total += r.size();
  REQUIRE(step["instructions"].size() == total);
  int sends = 0, gradients = 0, waits = 0;
  for (const auto& item : step["instructions"]) {
    if (item["kind"] == "send") {
      ++sends;
      CHECK(item["peers"].size() == 1);
      CHECK(item["bytes"].get<double>() > 0);
    }
    if (item["kind"] == "fwd") CHECK(item["flops"].get<double>() > 0);
    const bool for_gradients =
        item["name"].get<std::string>().find("dp_gradients") != std::string::npos;
    if (item["kind"] == "wait") {  // overlap=on: the started all-reduce's wait, with its request
      waits += for_gradients;
      CHECK(item.contains("request"));
    } else if (for_gradients) {
      ++gradients;
      CHECK(item["peers"].size() == 1);  // the other dp replica
    }
  }
  CHECK(sends == 2 * 2 * 2);  // 2 replicas x 2 microbatches x (activation + gradient)
  CHECK(gradients == 4);      // one all-reduce per rank (gpt2-nano: one bucket)
  CHECK(waits == 4);          // each waited
  ChromeTrace trace(s.world);
  trace.add_step(0, 0.0, s, timings);
  trace.write((dir / "trace.json").string());
  const auto doc = nlohmann::json::parse(std::ifstream(dir / "trace.json"));
  int complete = 0, comm_lane = 0;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X") {
      ++complete;
      if (e["tid"] == 1) ++comm_lane;
    }
  CHECK(complete == int(total));
  CHECK(comm_lane > 0);
  fs::remove_all(dir);
}
