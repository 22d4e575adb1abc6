// Every kind of plan against one rank, in this process: the plan's ranks are threads on a
// LoopbackCommunicator, each with its own Gpt2Stage and Interpreter, playing 20 steps of gpt2-nano
// (the MPI equivalence test's settings: batch 8, seq 32, lr 3e-3 with 2 warm-up steps, seed 42).
// Compared as tests/exec/mpi/compare_runs.py compares two runs (see its docstring for why not
// element by element): every step's loss within 1e-5 relative, every tensor of the final full
// parameters within 1e-5 relative L2, the key bias (zero gradient in exact arithmetic) within
// 1e-4 absolute. Also: the loopback communicator's own collectives and its refusals.
// Overlap: every plan with overlap=on gives the same losses and final parameters as
// with overlap=off TO THE LAST BIT (no tolerance), and so does a schedule overlapped by hand here
// (whole-stage gradient collectives and pipeline sends started, waited late), which exercises the
// interpreter's starts and waits whatever compile() places.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "exec/comm/loopback_communicator.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/kernels_layout.hpp"
#include "exec/model/lr_schedule.hpp"
#include "exec/play/interpreter.hpp"
#include "models/model_spec.hpp"
#include "plan/schedule.hpp"

using namespace fabtrain;

namespace {

constexpr int kBatch = 8, kSeq = 32, kSteps = 20;

struct Outcome {
  std::vector<float> losses;  // per step
  std::vector<float> full;    // final parameters, llm.c layout
};

// A deterministic, learnable corpus: sequence s counts up from its own start (mod 64), so the
// next token follows from the current one (targets are the next position's token).
int token(std::int64_t s, int p, int vocab) { return int((s * 7 + p) % std::min(64, vocab)); }

// One rank's whole run; its share of the final parameters is added into `full`.
void play_rank(const ModelSpec& model, const Schedule& schedule, int rank, LoopbackHub& hub,
               std::vector<float>& losses, std::vector<float>& full, std::mutex& full_mutex) {
  LoopbackCommunicator comm(hub, rank);
  try {
    omp_set_num_threads(1);
    comm.set_groups(schedule.groups);
    const Plan& plan = schedule.plan;
    const RankCoord coord = rank_coord(plan, rank);
    const BlockRange blocks = stage_blocks(model, plan).at(coord.pp);
    Gpt2Stage stage(model, blocks, plan.tp, coord.tp, schedule.microbatch, kSeq, plan.mb);
    stage.set_recompute(plan.recompute);
    stage.load_full(init_full_parameters(model, 42));
    Interpreter interpreter(model, schedule, rank, stage, comm, AdamW{}, 1.0f);
    const LrSchedule lr{3e-3f, 2, kSteps, 0.1f};
    const int per_replica = schedule.global_batch / plan.dp;
    for (int step = 0; step < kSteps; ++step) {
      auto feed = [&](int mb, std::span<int> tokens, std::span<int> targets) {
        const std::int64_t first = std::int64_t(step) * schedule.global_batch +
                                   std::int64_t(coord.dp) * per_replica +
                                   std::int64_t(mb) * schedule.microbatch;
        for (int q = 0; q < schedule.microbatch; ++q)
          for (int p = 0; p < kSeq; ++p) {
            tokens[q * kSeq + p] = token(first + q, p, model.vocab_size);
            targets[q * kSeq + p] = token(first + q, p + 1, model.vocab_size);
          }
      };
      losses.push_back(interpreter.play_step(step, lr.at(step), feed).mean_loss);
    }
    interpreter.gather_parameters();
    if (coord.dp != 0) return;  // dp replicas hold the same parameters: count them once
    const auto params = stage.params();
    const auto& counted = interpreter.counted_mask();
    std::lock_guard lock(full_mutex);
    for (const ParamRun& run : stage.param_runs())
      for (std::int64_t k = 0; k < run.count; ++k)
        if (counted[run.local_offset + k])
          full[run.full_offset + k] += params[run.local_offset + k];
  } catch (const std::exception& e) {
    try {
      comm.abort(e.what());  // the other ranks stop waiting for this one
    } catch (const std::exception&) {
    }
    throw;
  }
}

// Starts the step-end gradient collectives and every send, waiting on them as late as their
// buffers allow: the gradient ones just before the first tied-embedding, norm or optimizer
// instruction, the sends just before the optimizer step. Receives wait right away.
Schedule overlap_by_hand(Schedule schedule) {
  for (std::vector<Instruction>& stream : schedule.ranks) {
    std::vector<Instruction> out;
    std::vector<Instruction> gradient_waits, send_waits;
    int next = 0;
    for (Instruction in : stream) {
      if (auto* c = std::get_if<Collective>(&in)) {
        const bool gradients =
            c->mb < 0 &&
            (c->purpose == Purpose::dp_gradients || c->purpose == Purpose::zero_gradients) &&
            c->request < 0;
        if (c->purpose == Purpose::tied_embedding || c->purpose == Purpose::grad_norm) {
          out.insert(out.end(), gradient_waits.begin(), gradient_waits.end());
          gradient_waits.clear();
        }
        if (gradients) {
          c->request = next++;
          gradient_waits.push_back(
              Wait{c->request, Awaits::collective, c->bytes, c->op, c->purpose});
        }
      } else if (auto* send = std::get_if<Send>(&in); send && send->request < 0) {
        send->request = next++;
        send_waits.push_back(Wait{send->request, Awaits::send, send->bytes});
      } else if (auto* recv = std::get_if<Recv>(&in); recv && recv->request < 0) {
        recv->request = next++;
        out.push_back(in);
        out.push_back(Wait{recv->request, Awaits::recv, recv->bytes});
        continue;
      } else if (std::holds_alternative<OptimizerStep>(in)) {
        out.insert(out.end(), gradient_waits.begin(), gradient_waits.end());
        out.insert(out.end(), send_waits.begin(), send_waits.end());
        gradient_waits.clear();
        send_waits.clear();
      }
      out.push_back(in);
    }
    stream = out;
  }
  return schedule;
}

// The gradient collectives' waits moved to just before the first tied-embedding or norm call,
// in the opposite order of their starts (as valid: what travels is the collectives' own copy):
// the reduce-scatters must still add into the shard in the order they started.
Schedule reverse_waits(Schedule schedule) {
  for (std::vector<Instruction>& stream : schedule.ranks) {
    std::vector<Instruction> out, waits;
    for (const Instruction& in : stream) {
      const auto* w = std::get_if<Wait>(&in);
      if (w && (w->purpose == Purpose::zero_gradients || w->purpose == Purpose::dp_gradients) &&
          w->what == Awaits::collective) {
        waits.insert(waits.begin(), in);
        continue;
      }
      const auto* c = std::get_if<Collective>(&in);
      if (c && (c->purpose == Purpose::tied_embedding || c->purpose == Purpose::grad_norm)) {
        out.insert(out.end(), waits.begin(), waits.end());
        waits.clear();
      }
      out.push_back(in);
    }
    stream = out;
  }
  return schedule;
}

enum class Variant { compiled, by_hand, reversed_waits };

Outcome train(const std::string& plan_text, Variant variant = Variant::compiled) {
  const ModelSpec model = load_model("gpt2-nano");
  const Plan plan = parse_plan(plan_text);
  const Schedule compiled = compile(model, plan, kBatch, kSeq);
  const Schedule schedule = variant == Variant::by_hand          ? overlap_by_hand(compiled)
                            : variant == Variant::reversed_waits ? reverse_waits(compiled)
                                                                 : compiled;
  const int ranks = plan.ranks();
  LoopbackHub hub(ranks);
  std::vector<std::vector<float>> losses(ranks);
  Outcome out;
  out.full.assign(std::size_t(full_layout(model).total), 0.0f);
  std::mutex full_mutex;
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        play_rank(model, schedule, r, hub, losses[r], out.full, full_mutex);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ranks; ++r)
    if (!errors[r].empty()) fail("plan {} rank {}: {}", plan_text, r, errors[r]);
  for (int r = 1; r < ranks; ++r)
    if (losses[r] != losses[0])
      fail("plan {}: rank {} reports other losses than rank 0", plan_text, r);
  out.losses = losses[0];
  return out;
}

const Outcome& one_rank() {
  static const Outcome reference = train("dp=1");
  return reference;
}

void check_equals_one_rank(const std::string& plan) {
  INFO("plan " << plan);
  const Outcome& ref = one_rank();
  const Outcome run = train(plan);
  REQUIRE(run.losses.size() == ref.losses.size());
  for (std::size_t s = 0; s < ref.losses.size(); ++s) {
    INFO("step " << s << ": " << run.losses[s] << " vs " << ref.losses[s]);
    CHECK(std::fabs(run.losses[s] - ref.losses[s]) <= 1e-5 * std::fabs(ref.losses[s]));
  }
  const ModelSpec model = load_model("gpt2-nano");
  const FullLayout layout = full_layout(model);
  const int C = model.n_embd, L = model.n_layer;
  std::vector<float> a = ref.full, b = run.full;
  for (int l = 0; l < L; ++l) {  // the key bias: absolute tolerance, then left out of the L2
    const std::int64_t k = layout.offset[t_qkvb] + std::int64_t(l) * 3 * C + C;
    double worst = 0;
    for (int i = 0; i < C; ++i) {
      worst = std::max(worst, double(std::fabs(a[k + i] - b[k + i])));
      a[k + i] = b[k + i] = 0.0f;
    }
    INFO("key bias of layer " << l);
    CHECK(worst <= 1e-4);
  }
  for (int t = 0; t < t_count; ++t) {
    double norm = 0, diff = 0;
    for (std::int64_t i = layout.offset[t]; i < layout.offset[t] + layout.size[t]; ++i) {
      norm += double(a[i]) * a[i];
      diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    }
    INFO("tensor " << t << ": ||diff|| " << std::sqrt(diff) << ", ||ref|| " << std::sqrt(norm));
    CHECK(std::sqrt(diff) <= 1e-5 * (norm > 0 ? std::sqrt(norm) : 1.0));
  }
}

// overlap=on against overlap=off (and against the by-hand overlap of the blocking schedule):
// the same bits, losses and every parameter.
void check_overlap_bits(const std::string& plan) {
  INFO("plan " << plan);
  // Not vacuous: compile() starts and waits something under overlap=on.
  const Schedule on_schedule =
      compile(load_model("gpt2-nano"), parse_plan(plan + ",overlap=on"), kBatch, kSeq);
  int waits = 0;
  for (const auto& stream : on_schedule.ranks)
    for (const Instruction& in : stream) waits += std::holds_alternative<Wait>(in);
  CHECK(waits > 0);
  const Outcome off = train(plan + ",overlap=off");
  const Outcome on = train(plan + ",overlap=on");
  const Outcome by_hand = train(plan + ",overlap=off", Variant::by_hand);
  const Outcome reversed = train(plan + ",overlap=on", Variant::reversed_waits);
  CHECK(reversed.losses == off.losses);
  REQUIRE(off.losses.size() == std::size_t(kSteps));
  CHECK(on.losses == off.losses);
  CHECK(by_hand.losses == off.losses);
  std::size_t differ_on = 0, differ_hand = 0, differ_reversed = 0;
  for (std::size_t i = 0; i < off.full.size(); ++i) {
    differ_on += std::memcmp(&on.full[i], &off.full[i], sizeof(float)) != 0;
    differ_reversed += std::memcmp(&reversed.full[i], &off.full[i], sizeof(float)) != 0;
    differ_hand += std::memcmp(&by_hand.full[i], &off.full[i], sizeof(float)) != 0;
  }
  CHECK(differ_on == 0);
  CHECK(differ_hand == 0);
  CHECK(differ_reversed == 0);
}

}  // namespace

TEST_CASE("loopback plans: the one-rank run trains (the loss falls)") {
  const Outcome& ref = one_rank();
  REQUIRE(ref.losses.size() == std::size_t(kSteps));
  INFO("first loss " << ref.losses.front() << ", last " << ref.losses.back());
  CHECK(ref.losses.back() < ref.losses.front() - 0.1f);
}

TEST_CASE("loopback plans: dp=2 (zero=0) equals one rank") { check_equals_one_rank("dp=2"); }
TEST_CASE("loopback plans: dp=2,zero=1 equals one rank") { check_equals_one_rank("dp=2,zero=1"); }
TEST_CASE("loopback plans: dp=2,zero=2,mb=2 equals one rank") {
  check_equals_one_rank("dp=2,zero=2,mb=2");
}
TEST_CASE("loopback plans: dp=2,zero=3,mb=2 equals one rank") {
  check_equals_one_rank("dp=2,zero=3,mb=2");
}
TEST_CASE("loopback plans: tp=2 equals one rank") { check_equals_one_rank("tp=2"); }
TEST_CASE("loopback plans: pp=2 (gpipe) equals one rank") {
  check_equals_one_rank("pp=2,schedule=gpipe,mb=2");
}
TEST_CASE("loopback plans: pp=2 (1f1b, recompute) equals one rank") {
  check_equals_one_rank("pp=2,schedule=1f1b,mb=4,recompute=on");
}
TEST_CASE("loopback plans: dp=2,pp=2 equals one rank") { check_equals_one_rank("dp=2,pp=2,mb=2"); }
TEST_CASE("loopback plans: tp=2,pp=2 equals one rank") { check_equals_one_rank("tp=2,pp=2,mb=2"); }
TEST_CASE("loopback plans: dp=2,tp=2,zero=1 equals one rank") {
  check_equals_one_rank("dp=2,tp=2,zero=1");
}
TEST_CASE("loopback plans: dp=2,tp=2,pp=2,zero=3 equals one rank") {
  check_equals_one_rank("dp=2,tp=2,pp=2,zero=3,mb=2");
}

TEST_CASE("loopback overlap: dp=2 on and off are bit-equal") { check_overlap_bits("dp=2"); }
TEST_CASE("loopback overlap: dp=2,zero=1 on and off are bit-equal") {
  check_overlap_bits("dp=2,zero=1");
}
TEST_CASE("loopback overlap: dp=2,zero=2,mb=2 on and off are bit-equal") {
  check_overlap_bits("dp=2,zero=2,mb=2");
}
TEST_CASE("loopback overlap: dp=2,zero=2,mb=4 on and off are bit-equal (waits in any order)") {
  check_overlap_bits("dp=2,zero=2,mb=4");  // 4 reduce-scatters add into each shard element
}
TEST_CASE("loopback overlap: dp=2,zero=3,mb=2 on and off are bit-equal") {
  check_overlap_bits("dp=2,zero=3,mb=2");
}
TEST_CASE("loopback overlap: pp=2 (1f1b) on and off are bit-equal") {
  check_overlap_bits("pp=2,schedule=1f1b,mb=4");
}
TEST_CASE("loopback overlap: dp=2,pp=2 on and off are bit-equal") {
  check_overlap_bits("dp=2,pp=2,mb=2");
}
TEST_CASE("loopback overlap: dp=2,tp=2,pp=2,zero=3 on and off are bit-equal") {
  check_overlap_bits("dp=2,tp=2,pp=2,zero=3,mb=2");
}
TEST_CASE("loopback overlap: dp=2 with small buckets equals one rank") {
  check_equals_one_rank("dp=2,zero=2,mb=2,bucket_mib=1");
}

TEST_CASE("loopback overlap: a wait without its start and a started norm are refused") {
  const ModelSpec model = load_model("gpt2-nano");
  Schedule schedule = compile(model, parse_plan("dp=1"), kBatch, kSeq);
  schedule.ranks[0].insert(schedule.ranks[0].begin(), Wait{3, Awaits::recv, 4});
  LoopbackHub hub(1);
  LoopbackCommunicator comm(hub, 0);
  comm.set_groups(schedule.groups);
  Gpt2Stage stage(model, {0, block_count(model)}, 1, 0, schedule.microbatch, kSeq, 1);
  stage.load_full(init_full_parameters(model, 42));
  auto feed = [](int, std::span<int> tokens, std::span<int> targets) {
    std::fill(tokens.begin(), tokens.end(), 1);
    std::fill(targets.begin(), targets.end(), 2);
  };
  CHECK_THROWS_WITH_AS(Interpreter(model, schedule, 0, stage, comm, AdamW{}, 1.0f),
                       doctest::Contains("wait without a start of request 3"), Error);
  schedule.ranks[0].erase(schedule.ranks[0].begin());
  for (Instruction& in : schedule.ranks[0])  // the norm's all-reduce is not started: refused
    if (auto* c = std::get_if<Collective>(&in); c && c->purpose == Purpose::grad_norm) {
      c->request = 0;
      schedule.ranks[0].insert(schedule.ranks[0].end(), Wait{0, Awaits::collective, c->bytes});
      break;
    }
  CHECK_THROWS_WITH_AS(Interpreter(model, schedule, 0, stage, comm, AdamW{}, 1.0f),
                       doctest::Contains("cannot be non-blocking"), Error);
  // The schedule as compiled plays.
  schedule = compile(model, parse_plan("dp=1"), kBatch, kSeq);
  Interpreter interpreter(model, schedule, 0, stage, comm, AdamW{}, 1.0f);
  CHECK(std::isfinite(interpreter.play_step(0, 1e-3f, feed).mean_loss));
}

TEST_CASE("loopback communicator: collectives sum in group order, sends never wait") {
  LoopbackHub hub(3);
  std::vector<std::vector<float>> reduced(3), scattered(3), gathered(3), received(3);
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      try {
        comm.set_groups({{0, 1, 2}, {2, 0}});
        reduced[r] = {float(r), 10.0f * r};
        comm.all_reduce(0, reduced[r]);
        std::vector<float> in = {1.0f * r, 2.0f * r, 3.0f * r};
        scattered[r].assign(1, 0.0f);
        comm.reduce_scatter(0, in, scattered[r]);
        if (r != 1) {  // group 1 is ranks 2, 0: rank 2 is position 0
          gathered[r].assign(4, 0.0f);
          const std::vector<float> mine = {float(r), float(r) + 0.5f};
          comm.all_gather(1, mine, gathered[r]);
        }
        comm.send((r + 1) % 3, std::vector<float>{100.0f + r}, 7);  // a ring: every send first
        received[r].assign(1, 0.0f);
        comm.recv((r + 2) % 3, received[r], 7);
        comm.barrier();
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    REQUIRE(errors[r].empty());
    CHECK(reduced[r] == std::vector<float>{3.0f, 30.0f});
    CHECK(scattered[r] == std::vector<float>{3.0f * (r + 1)});
    CHECK(received[r] == std::vector<float>{100.0f + float((r + 2) % 3)});
  }
  CHECK(gathered[0] == std::vector<float>{2.0f, 2.5f, 0.0f, 0.5f});
  CHECK(gathered[2] == gathered[0]);
}

TEST_CASE("loopback communicator: a failing rank ends the others' waits, a bad group is refused") {
  LoopbackHub hub(2, 30);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      try {
        comm.set_groups({{0, 1}});
        if (r == 1) comm.abort("rank 1 gives up");
        std::vector<float> x(4, 1.0f);
        comm.all_reduce(0, x);  // rank 0 waits for rank 1, which aborted
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(errors[1].find("rank 1 gives up") != std::string::npos);
  CHECK(errors[0].find("rank 1 gives up") != std::string::npos);

  LoopbackHub alone(1);
  LoopbackCommunicator comm(alone, 0);
  std::vector<float> x(2, 1.0f);
  CHECK_THROWS_AS(comm.all_reduce(0, x), Error);  // before set_groups
  comm.set_groups({{0}});
  CHECK_THROWS_AS(comm.all_reduce(3, x), Error);  // no such group
  CHECK_THROWS_AS(comm.send(1, x, 0), Error);     // no such rank
}
