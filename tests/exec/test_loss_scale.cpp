// Dynamic loss scaling (exec/play/loss_scale.hpp): the scaler's decisions (an overflow skips the
// step and halves the scale, growth after its interval of applied steps, divergence at the
// smallest scale, bad settings refused), and the interpreter with it on the CPU over the
// loopback communicator: a power-of-two scale gives the same losses and parameters TO THE LAST
// BIT as none (scaling and unscaling are exact), and an overflowing gradient skips that step on
// every rank, leaving the parameters as they were, at half the scale the step after. A run
// resumed from a checkpoint continues the scaler's state (scales, skips and growth as without the
// break, to the bit), and state files without it are read and refused by name where it is needed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cpu_ops_as_device.hpp"
#include "exec/model/checked_file.hpp"
#include "exec/play/interpreter.hpp"
#include "exec/play/loss_scale.hpp"
#include "exec/run/checkpoint_dir.hpp"
#include "exec/run/loss_scaling_resume.hpp"
#include "exec/run/rank_state.hpp"
#include "loopback_ranks.hpp"
#include "plan/schedule.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using Decision = LossScaler::Decision;

TEST_CASE("loss scaler: an overflow skips the step and halves the scale, NaN as infinity") {
  LossScaler scaler({1024.0f, 3, 1.0f});
  CHECK(scaler.scale() == 1024.0f);
  CHECK(scaler.update(2.5) == Decision::apply);
  CHECK(scaler.update(std::numeric_limits<double>::infinity()) == Decision::skip);
  CHECK(scaler.scale() == 512.0f);
  CHECK(scaler.update(std::nan("")) == Decision::skip);
  CHECK(scaler.scale() == 256.0f);
  CHECK(scaler.skipped() == 2);
}

TEST_CASE("loss scaler: the scale doubles after its interval of applied steps in a row") {
  LossScaler scaler({8.0f, 3, 1.0f});
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.scale() == 8.0f);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.scale() == 16.0f);
  // An overflow restarts the count: three more applied steps before the next doubling.
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.update(INFINITY) == Decision::skip);
  CHECK(scaler.scale() == 8.0f);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.scale() == 8.0f);
  CHECK(scaler.update(1.0) == Decision::apply);
  CHECK(scaler.scale() == 16.0f);
}

TEST_CASE("loss scaler: an overflow at the smallest scale is divergence; bad settings refused") {
  LossScaler scaler({2.0f, 100, 1.0f});
  CHECK(scaler.update(INFINITY) == Decision::skip);
  CHECK(scaler.scale() == 1.0f);
  CHECK(scaler.update(INFINITY) == Decision::diverged);
  CHECK(scaler.scale() == 1.0f);
  CHECK(test::error_of([] {
          LossScaler({1000.0f, 10, 1.0f});
        }).find("powers of two") != std::string::npos);
  CHECK(test::error_of([] { LossScaler({4.0f, 10, 8.0f}); }).find("exceeds") != std::string::npos);
  CHECK(test::error_of([] {
          LossScaler({4.0f, 0, 1.0f});
        }).find("growth interval") != std::string::npos);
  CHECK(LossScaler().scale() == 65536.0f);  // PyTorch's GradScaler's initial scale
}

namespace {

constexpr int kBatch = 8, kSeq = 16, kSteps = 4;

struct RankRun {
  std::vector<float> losses, scales;
  std::vector<char> skipped;
  std::vector<std::vector<float>> params;  // after each step
};

struct Scaling {
  bool on = false;
  float initial = 1.0f;
  int overflow_call = -1;  // overflow_rank's cross-entropy backward that overflows
  int overflow_rank = 0;
  int growth_interval = 2000;
};

// One rank's stage and interpreter, from the seed's parameters.
struct RankPlayer {
  RankCoord coord;
  std::unique_ptr<Gpt2Stage> stage;
  std::unique_ptr<Interpreter> interpreter;

  RankPlayer(const ModelSpec& model, const Schedule& schedule, int rank, Communicator& comm,
             bool device, const Scaling& scaling, int overflow_call) {
    const Plan& plan = schedule.plan;
    coord = rank_coord(plan, rank);
    auto ops = std::make_unique<CpuOpsAsDevice>(device, false);
    if (rank == scaling.overflow_rank) ops->overflow_call = overflow_call;
    stage =
        std::make_unique<Gpt2Stage>(model, stage_blocks(model, plan).at(coord.pp), plan.tp,
                                    coord.tp, schedule.microbatch, kSeq, plan.mb, std::move(ops));
    stage->load_full(init_full_parameters(model, 42));
    interpreter = std::make_unique<Interpreter>(model, schedule, rank, *stage, comm, AdamW{}, 1.0f);
    if (scaling.on) interpreter->set_loss_scaling({scaling.initial, scaling.growth_interval, 1.0f});
  }

  // Steps [first, last), each recorded into out.
  void play(int first, int last, RankRun& out) {
    for (int step = first; step < last; ++step) {
      auto feed = [&](int mb, std::span<int> tokens, std::span<int> targets) {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
          tokens[i] = int((i * 7 + std::size_t(step * 3 + mb + coord.dp)) % 64);
          targets[i] = int((i * 7 + std::size_t(step * 3 + mb + coord.dp) + 1) % 64);
        }
      };
      const StepOutcome outcome = interpreter->play_step(step, 3e-3f, feed);
      out.losses.push_back(outcome.mean_loss);
      out.scales.push_back(outcome.loss_scale);
      out.skipped.push_back(outcome.skipped);
      interpreter->gather_parameters();
      const auto params = stage->params();
      out.params.emplace_back(params.begin(), params.end());
    }
  }
};

std::vector<RankRun> run_plan(const std::string& plan_text, bool device, const Scaling& scaling,
                              int steps = kSteps) {
  const ModelSpec model = load_model("gpt2-nano");
  const Schedule schedule = compile(model, parse_plan(plan_text), kBatch, kSeq);
  std::vector<RankRun> runs(schedule.ranks.size());
  const std::vector<std::string> errors =
      test::run_loopback_ranks(schedule, device, [&](int rank, Communicator& comm) {
        RankPlayer(model, schedule, rank, comm, device, scaling, scaling.overflow_call)
            .play(0, steps, runs[std::size_t(rank)]);
      });
  for (const std::string& error : errors) REQUIRE(error == "");
  return runs;
}

}  // namespace

TEST_CASE("loss scaling on the CPU: a power-of-two scale trains to the same bits as none") {
  for (const std::string plan : {"dp=2", "pp=2,mb=2", "dp=2,zero=2,mb=2"})
    for (const bool device : {false, true}) {
      INFO(plan << (device ? " on the device path" : " on the host path"));
      const auto plain = run_plan(plan, device, {});
      const auto scaled = run_plan(plan, device, {true, 4096.0f});
      for (std::size_t r = 0; r < plain.size(); ++r) {
        CHECK(scaled[r].losses == plain[r].losses);
        CHECK(scaled[r].params == plain[r].params);
        CHECK(scaled[r].scales == std::vector<float>(kSteps, 4096.0f));
        CHECK(scaled[r].skipped == std::vector<char>(kSteps, 0));
        CHECK(plain[r].scales == std::vector<float>(kSteps, 0.0f));  // no scaling: none reported
      }
    }
}

TEST_CASE("loss scaling on the CPU: an overflow skips that step on every rank at half the scale") {
  // The head's rank: rank 0 under dp=2 (rank 1's replica stays finite), the last stage under pp.
  for (const auto& [plan_text, rank] : {std::pair<std::string, int>{"dp=2", 0}, {"pp=2,mb=2", 1}})
    for (const bool device : {false, true}) {
      // Named copies: clang refuses structured bindings inside INFO's capturing lambda.
      const std::string plan = plan_text;
      const int head_rank = rank;
      INFO(plan << (device ? " on the device path" : " on the host path"));
      const int mb = parse_plan(plan).mb;
      const auto plain = run_plan(plan, device, {true, 4096.0f});
      // The head's first backward of step 1 (calls count from 0, mb per step) overflows.
      const auto runs = run_plan(plan, device, {true, 4096.0f, mb, head_rank});
      for (std::size_t r = 0; r < runs.size(); ++r) {
        INFO("rank " << r);
        CHECK(runs[r].skipped == std::vector<char>{0, 1, 0, 0});
        CHECK(runs[r].scales == std::vector<float>{4096.0f, 4096.0f, 2048.0f, 2048.0f});
        CHECK(runs[r].losses[0] == plain[r].losses[0]);
        CHECK(runs[r].losses[1] == plain[r].losses[1]);  // the forward ran before the overflow
        CHECK(runs[r].params[1] == runs[r].params[0]);   // no update at the skipped step
        CHECK(runs[r].params[2] != runs[r].params[1]);
        for (float loss : runs[r].losses) CHECK(std::isfinite(loss));
      }
    }
}

namespace {

// Steps [0, split) of every rank, a checkpoint as the trainer writes it (the parameters, the
// rank's state file with its moments and scaler), then a fresh stage and interpreter that take
// it back and play steps [split, steps).
std::vector<RankRun> run_resumed(const std::string& plan_text, bool device, const Scaling& scaling,
                                 int split, int steps) {
  const ModelSpec model = load_model("gpt2-nano");
  const Schedule schedule = compile(model, parse_plan(plan_text), kBatch, kSeq);
  const test::TempDir dir("fabtrain_loss_scale_resume");
  std::vector<RankRun> runs(schedule.ranks.size());
  const std::vector<std::string> errors =
      test::run_loopback_ranks(schedule, device, [&](int rank, Communicator& comm) {
        RankRun& out = runs[std::size_t(rank)];
        const std::string path = rank_state_path(dir.path().string(), split, rank);
        std::vector<float> full(std::size_t(full_parameter_count(model)), 0.0f);
        {
          RankPlayer first(model, schedule, rank, comm, device, scaling, scaling.overflow_call);
          first.play(0, split, out);
          const auto params = first.stage->params();  // gathered by play()
          for (const ParamRun& run : first.stage->param_runs())
            std::copy_n(params.begin() + run.local_offset, run.count,
                        full.begin() + run.full_offset);
          RankState state;
          state.step = split;
          state.adam_m = first.interpreter->adam_m();
          state.adam_v = first.interpreter->adam_v();
          state.loss_scaling = first.interpreter->loss_scaling_state();
          write_rank_state(path, state);
        }
        RankPlayer second(model, schedule, rank, comm, device, scaling, -1);
        second.stage->load_full(full);
        RankState state = read_rank_state(path);
        second.interpreter->adam_m() = std::move(state.adam_m);
        second.interpreter->adam_v() = std::move(state.adam_v);
        second.interpreter->parameters_changed();
        resume_loss_scaling(*second.interpreter, state, path);
        second.play(split, steps, out);
      });
  for (const std::string& error : errors) REQUIRE(error == "");
  return runs;
}

}  // namespace

TEST_CASE("loss scaling resumed from a checkpoint scales, skips and grows as without the break") {
  // Growth after 2 applied steps; step 1 overflows: 4096, 4096 (skipped), 2048, then the
  // checkpoint after step 2 holds 2048 with one good step, so step 3 doubles the scale for step 4.
  // A resume that restarted at the initial scale, or forgot the good step, would differ at 3 or 4.
  for (const std::string plan : {"dp=2", "dp=2,zero=1"})
    for (const bool device : {false, true}) {
      INFO(plan << (device ? " on the device path" : " on the host path"));
      const Scaling scaling{true, 4096.0f, 1, 0, 2};
      const auto whole = run_plan(plan, device, scaling, 6);
      const auto resumed = run_resumed(plan, device, scaling, 3, 6);
      for (std::size_t r = 0; r < whole.size(); ++r) {
        INFO("rank " << r);
        CHECK(whole[r].scales == std::vector<float>{4096, 4096, 2048, 2048, 4096, 4096});
        CHECK(whole[r].skipped == std::vector<char>{0, 1, 0, 0, 0, 0});
        CHECK(resumed[r].scales == whole[r].scales);
        CHECK(resumed[r].skipped == whole[r].skipped);
        CHECK(resumed[r].losses == whole[r].losses);
        CHECK(resumed[r].params == whole[r].params);
      }
    }
}

namespace {

// A version-3 state file: the format that holds no loss scaler state.
void write_version_3_state(const std::string& path, const RankState& s) {
  std::vector<char> bytes;
  const auto put = [&](const auto& value) {
    const char* p = reinterpret_cast<const char*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof value);
  };
  const auto put_text = [&](const std::string& text) {
    put(std::int64_t(text.size()));
    bytes.insert(bytes.end(), text.begin(), text.end());
  };
  const auto put_floats = [&](const std::vector<float>& v) {
    put(std::int64_t(v.size()));
    for (float x : v) put(x);
  };
  put(std::int32_t(20250101));
  put(std::int32_t(3));
  put(s.step);
  put(s.data_position);
  put(s.seed);
  put(std::int32_t(s.world));
  put(std::int32_t(s.rank));
  put_text(s.plan);
  put_text(s.settings);
  put_floats(s.adam_m);
  put_floats(s.adam_v);
  put(checksum(bytes.data(), bytes.size()));
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// resume_loss_scaling's message for `state` on a one-rank run with or without loss scaling ("":
// taken), and the scale the run continues at.
std::pair<std::string, float> resume_message(const RankState& state, bool scales) {
  const ModelSpec model = load_model("gpt2-nano");
  const Schedule schedule = compile(model, parse_plan("dp=1"), kBatch, kSeq);
  std::string message;
  float scale = 0;
  const auto errors = test::run_loopback_ranks(schedule, false, [&](int rank, Communicator& comm) {
    RankPlayer player(model, schedule, rank, comm, false, {scales, 1024.0f, -1, 0, 8}, -1);
    message = test::error_of([&] { resume_loss_scaling(*player.interpreter, state, "S"); });
    if (const auto taken = player.interpreter->loss_scaling_state()) scale = taken->scale;
  });
  for (const std::string& error : errors) REQUIRE(error == "");
  return {message, scale};
}

}  // namespace

TEST_CASE(
    "a state file keeps the loss scaler's state, and an fp16 run refuses an older one by name") {
  const test::TempDir dir("fabtrain_loss_scale_state");
  RankState state;
  state.step = 3;
  state.plan = "dp=1";
  state.adam_m = {0.5f};
  state.adam_v = {0.25f};
  state.loss_scaling = LossScalerState{256.0f, 5, 2};
  const std::string path = (dir.path() / "state.bin").string();
  write_rank_state(path, state);
  const RankState back = read_rank_state(path);
  REQUIRE(back.loss_scaling.has_value());
  CHECK(back.version == 4);
  CHECK(back.loss_scaling->scale == 256.0f);
  CHECK(back.loss_scaling->good_in_a_row == 5);
  CHECK(back.loss_scaling->skipped == 2);
  CHECK(resume_message(back, true) == std::pair<std::string, float>{"", 256.0f});
  CHECK(resume_message(back, false).first.find("S: written by a run that scales its loss") !=
        std::string::npos);
  RankState bad = back;
  bad.loss_scaling->scale = 3.0f;
  CHECK(resume_message(bad, true).first.find(
            "S: loss scaling: a saved scale of 3 is not a power") != std::string::npos);
  bad.loss_scaling = LossScalerState{256.0f, 8, 0};  // the growth interval is 8: at most 7
  CHECK(resume_message(bad, true).first.find("8 saved good steps in a row") != std::string::npos);

  // Version 3: readable, taken by a run without loss scaling, refused by an fp16 one.
  const std::string old_path = (dir.path() / "old.bin").string();
  write_version_3_state(old_path, state);
  const RankState old = read_rank_state(old_path);
  CHECK(old.version == 3);
  CHECK_FALSE(old.loss_scaling.has_value());
  CHECK(old.adam_m == state.adam_m);
  CHECK(resume_message(old, false).first == "");
  CHECK(resume_message(old, true).first.find("version 3 keeps no loss scale") != std::string::npos);
  RankState none = back;
  none.loss_scaling.reset();
  CHECK(resume_message(none, true).first.find("written by a run that scales no loss") !=
        std::string::npos);
}
