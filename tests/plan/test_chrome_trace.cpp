// The Chrome trace writer: valid JSON, one process per rank with the same lanes whoever recorded
// the timeline, events carrying cat and args, and one flow from each send to its receive.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "plan/chrome_trace.hpp"
#include "plan/verb.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

// Every instruction of every rank, back to back on its blocking lane (as the executor records).
std::vector<TimelineEvent> sequential(const Schedule& s, int steps) {
  std::vector<TimelineEvent> events;
  for (int step = 0; step < steps; ++step)
    for (int r = 0; r < s.world; ++r)
      for (std::size_t i = 0; i < s.ranks[r].size(); ++i) {
        const double start = step * 1.0 + i * 1e-3;
        events.push_back({r, blocking_lane(s.ranks[r][i]), int(i), start, start + 5e-4, step});
      }
  return events;
}

}  // namespace

TEST_CASE("a Chrome trace names ranks and lanes, carries cat and args, and pairs every send") {
  const ModelSpec m = load_model("gpt2-nano");
  const Schedule s = compile(m, parse_plan("dp=2,pp=2,mb=2"), 8, 16);
  const int steps = 2;
  const nlohmann::json doc =
      nlohmann::json::parse(chrome_trace(s, sequential(s, steps), {"a", "b", "c", "d"}).dump());
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  int spans = 0, sends = 0;
  std::map<int, std::pair<int, int>> flows;       // id -> (starts, finishes)
  std::map<int, std::pair<int, int>> flow_ranks;  // id -> (the send's peer, the receiving rank)
  for (const auto& e : doc.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (ph == "M" && e["name"] == "thread_name") threads[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (ph == "X") {
      ++spans;
      CHECK(e.contains("cat"));
      CHECK(e["args"].contains("bytes"));
      CHECK(e["args"].contains("step"));
      if (e["cat"] == "send") {
        ++sends;
        CHECK(e["args"].contains("peer"));
        CHECK(e["args"].contains("microbatch"));
      }
      if (e["cat"] == "fwd") CHECK(e["args"]["flops"].get<double>() > 0);
    }
    if (ph == "s") {
      ++flows[e["id"]].first;
      const std::string name = e["name"];  // "send act mb=0 to=2 bytes=..."
      flow_ranks[e["id"]].first = std::stoi(name.substr(name.find("to=") + 3));
    }
    if (ph == "f") {
      ++flows[e["id"]].second;
      flow_ranks[e["id"]].second = e["pid"];
      CHECK(e["bp"] == "e");
    }
  }
  std::size_t total = 0;
  for (const auto& stream : s.ranks) total += stream.size();
  CHECK(spans == int(total) * steps);
  CHECK(processes ==
        std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}, {2, "rank 2"}, {3, "rank 3"}});
  REQUIRE(threads.size() == 4 * kLaneCount);
  CHECK(threads[{2, kComputeLane}] == "compute");
  CHECK(threads[{2, kCommunicationLane}] == "communication");
  CHECK(threads[{2, kSendsInFlightLane}] == "in flight");
  CHECK(sends == 2 * 2 * 2 * steps);  // replicas x microbatches x (activation, gradient) x steps
  CHECK(int(flows.size()) == sends);  // one flow per send ...
  for (const auto& [id, ends] : flows) CHECK(ends == std::pair<int, int>{1, 1});  // ... paired
  for (const auto& [id, ranks] : flow_ranks) CHECK(ranks.first == ranks.second);  // to its peer
}

TEST_CASE("a timeline event outside the schedule is refused") {
  const Schedule s = compile(load_model("gpt2-nano"), parse_plan("dp=2"), 8, 16);
  CHECK(test::error_of([&] {
          chrome_trace(s, {{5, 0, 0, 0.0, 1.0, 0}});
        }).find("rank 5 instruction 0") != std::string::npos);
}
