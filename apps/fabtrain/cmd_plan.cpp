// fabtrain plan: search every plan of a model on a slice, rank them, recommend the best; or,
// with --rule study, apply the study's selection procedure.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "json_output.hpp"
#include "search_cli.hpp"
#include "selector/study_rule.hpp"

namespace fabtrain {
namespace {

struct Options {
  SearchCli search;
  int top = 10;
  std::string json;
  std::string rule = "search";
};

nlohmann::json to_json(const Evaluated& e, const Slice& slice) {
  nlohmann::json j = {{"plan", to_string(e.candidate.plan)},
                      {"technique", technique_name(e.candidate.plan)},
                      {"gpus", e.candidate.plan.ranks()},
                      {"where", describe_gpus(slice, e.candidate.subset.gpus)},
                      {"batch", e.candidate.global_batch},
                      {"peak_memory_bytes", e.peak_memory_bytes},
                      {"memory_capacity_bytes", e.memory_capacity_bytes},
                      {"oom", e.oom}};
  if (!e.oom && e.reason.empty()) {
    j["step_time_s"] = e.step_time_s;
    j["tokens_per_s"] = e.tokens_per_s;
    j["tflops_per_gpu"] = e.tflops_per_gpu;
    j["mfu"] = e.mfu;
    if (e.time_to_train_s > 0) j["time_to_train_s"] = e.time_to_train_s;
  } else {
    j["reason"] = e.reason;
  }
  return j;
}

void print_row(int index, const Evaluated& e, const Slice& slice) {
  fmt::print("{:>3}  {:<44} {:<14} {:<42} {:>8.3f} {:>7.2f} {:>9} {:>5}/{:<5}\n", index,
             to_short_string(e.candidate.plan), technique_name(e.candidate.plan),
             describe_gpus(slice, e.candidate.subset.gpus), e.step_time_s, e.tflops_per_gpu,
             format_duration(e.time_to_train_s), format_gib(e.peak_memory_bytes),
             format_gib(e.memory_capacity_bytes));
}

void write_json(const std::string& path, const nlohmann::json& j) { JsonOutput{path}.write(j); }

void run_study_rule(Options& o) {
  auto [model, slice, options] = o.search.resolve();
  std::FILE* text = o.json == "-" ? stderr : stdout;  // standard output carries the JSON alone
  fmt::print(text, "fabtrain plan --rule study: {}\n", o.search.describe());
  const RuleDecision d = study_rule(model, slice, options);
  for (const auto& s : d.steps) fmt::print(text, "  rule: {}\n", s);
  if (!d.found) fail("the study's rule finds no technique that fits {} on {}", model.name, slice.name);
  fmt::print(text, "study's choice: {} ({}) on {}: step {:.3f} s, {:.2f} TFLOP/s per GPU\n",
             to_string(d.chosen.candidate.plan), d.technique,
             describe_gpus(slice, d.chosen.candidate.subset.gpus), d.chosen.step_time_s,
             d.chosen.tflops_per_gpu);
  write_json(o.json, {{"rule", "study"}, {"steps", d.steps}, {"chosen", to_json(d.chosen, slice)}});
  fmt::print(text, "recommended: {}\n", exec_command(model, d.chosen, options.space.seq));
}

void run(Options& o) {
  if (o.rule == "study") return run_study_rule(o);
  if (o.rule != "search") fail("--rule={} is not known (search or study)", o.rule);
  auto [model, slice, options] = o.search.resolve();
  if (o.top < 1) fail("--top={} must be at least 1", o.top);
  const bool quiet = o.json == "-";  // standard output carries the JSON alone
  fmt::print(quiet ? stderr : stdout, "fabtrain plan: {}\n", o.search.describe());
  options.keep_top = o.top;  // the table's rows stay exact; the rest may be pruned
  const SearchResult r = search(model, slice, options);
  // Refused before any of the table is printed.
  if (r.ranked.empty()) {
    const auto& worst = r.out_of_memory;
    double least = 0;
    std::string reason;
    for (const auto& e : worst)
      if (least == 0 || e.peak_memory_bytes - e.memory_capacity_bytes < least)
        least = e.peak_memory_bytes - e.memory_capacity_bytes, reason = e.reason;
    fail("no plan of {} fits on {}: even the leanest plan is {} GiB short ({})", model.name,
         slice.name, format_gib(least), reason);
  }
  if (!quiet) {
    fmt::print("{} plans in {:.2f} s ({:.0f} plans/s): {} compiled, {} out of memory, {} simulated "
               "(the top {} are exact); skipped: {} with recomputation that memory does not need "
               "(the same plan without it fits and is faster), {} whose lower bound on the step "
               "time cannot reach the top {}\n\n",
               r.enumerated, r.seconds, r.enumerated / std::max(r.seconds, 1e-9), r.compiled,
               r.out_of_memory.size(), r.ranked.size(), o.top, r.skipped_recompute, r.bounded, o.top);
    fmt::print("{:>3}  {:<44} {:<14} {:<42} {:>8} {:>7} {:>9} {:>11}\n", "#", "plan", "technique",
               "GPUs", "step s", "TFLOP/s", "to train", "mem GiB");
    for (int i = 0; i < std::min<int>(o.top, int(r.ranked.size())); ++i)
      print_row(i + 1, r.ranked[i], slice);
    if (!r.out_of_memory.empty()) {
      fmt::print("\nout of memory ({} plans; the study's crosses), e.g.:\n", r.out_of_memory.size());
      for (int i = 0; i < std::min<int>(o.top, int(r.out_of_memory.size())); ++i)
        fmt::print("  x {:<44} {:<14} {}\n", to_short_string(r.out_of_memory[i].candidate.plan),
                   technique_name(r.out_of_memory[i].candidate.plan), r.out_of_memory[i].reason);
    }
    for (const auto& f : r.failed)
      fmt::print("  ! {} failed to simulate: {}\n", to_string(f.candidate.plan), f.reason);
  }
  // No wall-clock time in the JSON: the same search gives the same bytes (the terminal says how long).
  nlohmann::json j = {{"model", model.name}, {"slice", slice.name}, {"enumerated", r.enumerated}};
  j["ranked"] = nlohmann::json::array();
  for (const auto& e : r.ranked) j["ranked"].push_back(to_json(e, slice));
  j["out_of_memory"] = nlohmann::json::array();
  for (const auto& e : r.out_of_memory) j["out_of_memory"].push_back(to_json(e, slice));
  write_json(o.json, j);
  const Evaluated& best = r.ranked.front();
  if (!quiet)
    fmt::print("\nbest: {} ({}) on {}: step {:.3f} s, {:.2f} TFLOP/s per GPU, {:.0f} tokens/s\n",
               to_string(best.candidate.plan), technique_name(best.candidate.plan),
               describe_gpus(slice, best.candidate.subset.gpus), best.step_time_s,
               best.tflops_per_gpu, best.tokens_per_s);
  fmt::print(quiet ? stderr : stdout, "recommended: {}\n",
             exec_command(model, best, options.space.seq));
}

Registration reg(50, [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "plan", "Search every plan of a model on a slice, rank them by predicted throughput, and "
              "recommend the best (default: GPT-2 medium on the study's Utah + Amsterdam slice)");
  o->search.add_to(cmd);
  cmd->add_option("--top", o->top, "Rows to show")->capture_default_str();
  cmd->add_option("--json", o->json, "Write all results as JSON to FILE, or - for stdout");
  cmd->add_option("--rule", o->rule, "search (default) or study: the study's selection procedure");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
