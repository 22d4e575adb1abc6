// fabtrain schedule --model M --plan P [--batch B] [--seq S] [--rank R] [--slice S] [--json
// FILE|-]: compiles one training step of a plan and prints every rank's instruction stream (the
// same schedule the simulator and the executor play), after the resolved configuration. With
// --slice it also checks that the plan fits the slice's GPUs and shows where each rank runs. It
// plays the schedule symbolically and fails if the step would deadlock. Not here: timing
// (simulate).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "command.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "json_output.hpp"
#include "plan/default_batch.hpp"
#include "plan/schedule.hpp"
#include "plan/symbolic_run.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {
namespace {

struct Options {
  std::string model;
  std::string plan;
  int batch = 0;  // 0: 8 sequences per GPU of the plan
  int seq = 0;    // 0: the model's context
  int rank = -1;
  std::string slice;
  JsonOutput json;
};

// "1.50 GiB", "12.0 MiB", "640 B": memory as people read it.
std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.3g} {}", bytes, units[u]);
}

// Where a rank runs on the slice: "GPU 3 (vm-b, GPU_RTX6000)".
std::string placement(const Slice& slice, const Plan& plan, int rank) {
  const int device = device_of(plan, rank);
  const SliceGpu gpu = slice.gpus().at(device);
  return fmt::format("GPU {} ({}, {})", device, slice.vms.at(gpu.vm).name,
                     gpu.type ? gpu.type->name : slice.vms.at(gpu.vm).gpu);
}

void check_fits(const Slice& slice, const Plan& plan) {
  const int gpus = slice.gpu_count();
  if (plan.ranks() > gpus)
    fail("plan {} needs dp*tp*pp = {} GPUs but slice {} has {}", to_string(plan), plan.ranks(),
         slice.name, gpus);
  for (int d : plan.devices)
    if (d >= gpus)
      fail("plan devices name GPU {} but slice {} has GPUs 0-{}", d, slice.name, gpus - 1);
}

void run(const Options& o) {
  if (o.batch < 0) fail("--batch {} must be positive", o.batch);
  if (o.seq < 0) fail("--seq {} must be positive", o.seq);
  const ModelSpec model = load_model(o.model);
  const Plan plan = parse_plan(o.plan);
  const int batch = o.batch > 0 ? o.batch : default_global_batch(plan);
  const int seq = o.seq > 0 ? o.seq : model.n_ctx;
  std::optional<Slice> slice;
  if (!o.slice.empty()) {
    slice = load_slice(o.slice);
    check_fits(*slice, plan);
  }
  const Schedule schedule = compile(model, plan, batch, seq);
  if (o.rank >= schedule.world)
    fail("--rank {} out of range: the plan has ranks 0-{}", o.rank, schedule.world - 1);
  const SymbolicRun check = symbolic_run(schedule);
  if (!check.ok) fail("the compiled schedule does not play through: {}", check.message);

  const std::vector<BlockRange> stages = stage_blocks(model, plan);
  if (o.json.wanted()) {
    nlohmann::json config = {{"model", model.name},
                             {"plan", to_string(plan)},
                             {"technique", technique_name(plan)},
                             {"ranks", plan.ranks()},
                             {"global_batch", batch},
                             {"microbatch", schedule.microbatch},
                             {"seq", seq}};
    if (slice) config["slice"] = slice->name;
    nlohmann::json out = {{"config", config},
                          {"peak_in_flight", check.peak_in_flight},
                          {"peak_activation_bytes", check.peak_activation_bytes},
                          {"peak_request_bytes", check.peak_request_bytes}};
    if (o.rank >= 0) {
      out["rank"] = o.rank;
      out["static_bytes"] = schedule.static_bytes[o.rank];
      nlohmann::json list = nlohmann::json::array();
      for (const auto& in : schedule.ranks[o.rank]) {
        nlohmann::json one;
        to_json(one, in);
        list.push_back(std::move(one));
      }
      out["instructions"] = std::move(list);
    } else {
      nlohmann::json full;
      to_json(full, schedule);
      out["schedule"] = std::move(full);
    }
    o.json.write(out);
    if (o.json.to_stdout()) return;
  }

  fmt::print("model:      {} ({} layers, {} hidden, {} heads, vocab {}, {} parameters)\n",
             model.name, model.n_layer, model.n_embd, model.n_head, model.vocab_size,
             model.parameters());
  fmt::print("plan:       {} ({}, {})\n", to_string(plan), technique_name(plan),
             counted(plan.ranks(), "rank"));
  fmt::print(
      "batch:      {} sequences of {} tokens per step; {} per microbatch, {} microbatches "
      "per replica{}\n",
      batch, seq, schedule.microbatch, plan.mb, o.batch > 0 ? "" : " (default: 8 per GPU)");
  if (slice) fmt::print("slice:      {} ({})\n", slice->name, counted(slice->gpu_count(), "GPU"));
  for (std::size_t st = 0; st < stages.size(); ++st)
    fmt::print("stage {}:    blocks {}:{}\n", st, stages[st].begin, stages[st].end);
  for (std::size_t g = 0; g < schedule.groups.size(); ++g)
    fmt::print("group {}:    {} {}\n", g, to_string(schedule.group_kinds[g]),
               fmt::join(schedule.groups[g], ","));
  for (int r = 0; r < schedule.world; ++r) {
    if (o.rank >= 0 && r != o.rank) continue;
    const RankCoord c = rank_coord(plan, r);
    fmt::print(
        "rank {}:     dp={} tp={} pp={} on {}; model states {}, peak activations {} "
        "(microbatches in flight: {}), peak buffers of started transfers {}\n",
        r, c.dp, c.tp, c.pp,
        slice ? placement(*slice, plan, r) : fmt::format("device {}", device_of(plan, r)),
        human_bytes(schedule.static_bytes[r]), human_bytes(check.peak_activation_bytes[r]),
        check.peak_in_flight[r], human_bytes(check.peak_request_bytes[r]));
  }
  fmt::print("\n{}", to_text(schedule, o.rank));
}

Registration reg(30, [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "schedule", "Compile one training step of a plan and print every rank's instructions");
  cmd->add_option("--model", o->model, "Built-in model name or a GPT-2 config.json")->required();
  cmd->add_option("--plan", o->plan,
                  "Plan, e.g. dp=2,tp=1,pp=2,mb=8,zero=0,schedule=1f1b,recompute=off")
      ->required();
  cmd->add_option("--batch", o->batch,
                  "Global batch in sequences (default: 8 per GPU of the plan, rounded up to a "
                  "multiple of dp*mb)");
  cmd->add_option("--seq", o->seq, "Tokens per sequence (default: the model's context)");
  cmd->add_option("--rank", o->rank, "Print only this rank's instructions");
  cmd->add_option("--slice", o->slice,
                  "Check the plan against this slice's GPUs (built-in name or YAML path)");
  o->json.add_to(cmd, "the schedule");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
