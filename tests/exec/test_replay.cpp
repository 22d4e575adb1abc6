// Replay: every message a rank sends, receives or reduces has the schedule's size (as
// `fabtrain schedule --json` prints it), collectives run in place on one buffer, and compute
// instructions sleep the cost model's seconds.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "exec/play/replay.hpp"
#include "models/model_spec.hpp"
#include "platforms/catalog.hpp"

using namespace fabtrain;

namespace {

// Records each call's size and whether the spans alias as replay promises (no transport).
struct RecordingCommunicator final : Communicator {
  int me = 0, world = 1;
  std::vector<std::vector<int>> groups;
  std::vector<std::pair<std::string, double>> calls;  // kind, bytes
  bool aliased = true;
  int rank() const override { return me; }
  int size() const override { return world; }
  std::string host() const override { return "test"; }
  int position(int group) const {
    for (std::size_t k = 0; k < groups.at(group).size(); ++k)
      if (groups[group][k] == me) return int(k);
    return -1;
  }
  void all_reduce(int, std::span<float> data) override {
    calls.push_back({"all_reduce", 4.0 * data.size()});
  }
  void reduce_scatter(int, std::span<const float> in, std::span<float> out) override {
    calls.push_back({"reduce_scatter", 4.0 * in.size()});
    aliased = aliased && in.data() == out.data();
  }
  void all_gather(int group, std::span<const float> in, std::span<float> out) override {
    calls.push_back({"all_gather", 4.0 * out.size()});
    aliased = aliased && in.data() == out.data() + position(group) * in.size();
  }
  void send(int, std::span<const float> data, int) override {
    calls.push_back({"send", 4.0 * data.size()});
  }
  void recv(int, std::span<float> data, int) override {
    calls.push_back({"recv", 4.0 * data.size()});
  }
  void barrier() override {}
  void set_groups(const std::vector<std::vector<int>>& g) override { groups = g; }
  [[noreturn]] void abort(const std::string& message) override { fail("{}", message); }
};

}  // namespace

TEST_CASE("replay moves exactly the schedule's bytes, in place, for every kind of transfer") {
  const ModelSpec model = load_model("gpt2-nano");
  const Catalog& catalog = builtin_catalog();
  for (const char* text : {"dp=2,tp=2,pp=2,mb=2,zero=1", "dp=2,zero=3,mb=2", "dp=4,zero=2",
                           "pp=2,mb=4,schedule=1f1b"}) {
    CAPTURE(text);
    const Schedule schedule = compile(model, parse_plan(text), 16, 32);
    nlohmann::json printed;
    to_json(printed, schedule);  // what `fabtrain schedule --json` prints
    for (int r = 0; r < schedule.world; ++r) {
      CAPTURE(r);
      RecordingCommunicator comm;
      comm.me = r;
      comm.world = schedule.world;
      comm.set_groups(schedule.groups);
      Replayer replayer(schedule, r, comm, catalog.gpu("GPU_H100"), catalog.compute, Calibration{});
      replayer.play_step(0);
      std::vector<std::pair<std::string, double>> expected;
      for (const auto& in : printed["ranks"][r]) {
        const std::string op = in["op"];
        if (op == "send" || op == "recv") expected.push_back({op, in["bytes"].get<double>()});
        if (op == "all_reduce" || op == "reduce_scatter" || op == "all_gather")
          expected.push_back({op, in["bytes"].get<double>()});
      }
      REQUIRE(comm.calls.size() == expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        CAPTURE(i);
        CHECK(comm.calls[i].first == expected[i].first);
        // Whole 4-byte elements, a collective's in equal chunks: never less, at most one element
        // per member more; and exactly the bytes wherever they already divide so.
        const double n = 4.0 * schedule.world;
        CHECK(comm.calls[i].second >= expected[i].second);
        CHECK(comm.calls[i].second < expected[i].second + n);
        if (std::fmod(expected[i].second, n) == 0)
          CHECK(comm.calls[i].second == expected[i].second);
      }
      CHECK(comm.aliased);
    }
  }
}

TEST_CASE("replay sleeps each compute instruction for the cost model's seconds") {
  const ModelSpec model = load_model("gpt2-nano");
  const Catalog& catalog = builtin_catalog();
  const Schedule schedule = compile(model, parse_plan("dp=1"), 4, 64);
  RecordingCommunicator comm;
  comm.set_groups(schedule.groups);
  Replayer replayer(schedule, 0, comm, catalog.gpu("CPU_HOST"), catalog.compute, Calibration{});
  const auto timings = replayer.play_step(0);
  double modelled = 0;
  for (std::size_t i = 0; i < timings.size(); ++i) {
    const double expect = compute_seconds(schedule.ranks[0][i], catalog.gpu("CPU_HOST"),
                                          Precision::fp32, catalog.compute, Calibration{});
    CHECK(replayer.compute_seconds()[i] == expect);
    modelled += expect;
    if (expect > 0) {
      CHECK(timings[i].duration_s >= expect);
      // A sleep, not work: late by the scheduler's delay only (generous: the machine is shared).
      CHECK(timings[i].duration_s < expect + 0.5);
    }
  }
  CHECK(modelled > 0.001);
}

TEST_CASE(
    "replay's memory estimate holds the largest message, the sends' copies, the library's "
    "temporaries and the buffers in flight") {
  const ModelSpec model = load_model("gpt2-medium");
  const double gradients = 4.0 * model.parameters();
  // Blocking (overlap=off): the gradient buckets one at a time, in the shared buffer.
  const Schedule off = compile(model, parse_plan("dp=2,overlap=off"), 16, 1024);
  const ReplayMemory m = replay_memory(off, 0);
  CHECK(m.in_flight == 0);
  CHECK(m.buffer >= 25.0 * (1 << 20));  // at least one 25 MiB bucket
  CHECK(m.buffer < 0.5 * gradients);
  CHECK(m.library == doctest::Approx(m.buffer));  // two segments of half the buffer
  CHECK(m.send_copies == 0);
  // Overlapped: every bucket in flight before the gradient norm, each in its own buffer.
  const ReplayMemory on = replay_memory(compile(model, parse_plan("dp=2"), 16, 1024), 0);
  CHECK(on.in_flight == doctest::Approx(gradients).epsilon(0.01));
  const Schedule zero2 = compile(model, parse_plan("dp=2,zero=2,overlap=off"), 16, 1024);
  CHECK(replay_memory(zero2, 1).library >= 2 * 25.0 * (1 << 20));  // whole input + 2 halves
  const Schedule pp = compile(model, parse_plan("pp=2,mb=4,overlap=off"), 16, 1024);
  CHECK(replay_memory(pp, 0).send_copies ==
        doctest::Approx(4 * 4.0 * 4 * 1024 * 1024));  // 4 activations
  // Non-blocking sends are not copied: their buffers count as in flight instead.
  const ReplayMemory pp_on = replay_memory(compile(model, parse_plan("pp=2,mb=4"), 16, 1024), 0);
  CHECK(pp_on.send_copies == 0);
  CHECK(pp_on.in_flight >= 4.0 * 4 * 1024 * 1024);
}
