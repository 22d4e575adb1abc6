// fabtrain plan: search every plan of a model on a slice, rank them by one objective, say why the
// winner wins and where it stops winning, and print the line that runs it; or, with --rule study,
// apply the study's selection procedure next to the search's answer.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "command.hpp"
#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "common/text_table.hpp"
#include "json_output.hpp"
#include "say.hpp"
#include "search_cli.hpp"
#include "selector/break_even.hpp"
#include "selector/launch_line.hpp"
#include "selector/rule_vs_search.hpp"
#include "selector/study_rule.hpp"
#include "selector/why_it_wins.hpp"

namespace fabtrain {
namespace {

struct Options {
  SearchCli search;
  int top = 10;
  std::string json;
  std::string rule = "search";
  std::string break_even = "auto";
  bool wide = false;
};

double gpu_hours(const Evaluated& e) { return e.time_to_train_s * e.candidate.plan.ranks() / 3600; }

double cost(const Evaluated& e, Objective objective) {
  return objective_weight(objective, e.candidate.plan.ranks()) / e.tokens_per_s;
}

nlohmann::json to_json(const Evaluated& e, const Slice& slice) {
  nlohmann::json j = {{"plan", to_string(e.candidate.plan)},
                      {"technique", technique_name(e.candidate.plan)},
                      {"gpus", e.candidate.plan.ranks()},
                      {"where", describe_gpus(slice, e.candidate.subset.gpus)},
                      {"batch", e.candidate.global_batch},
                      {"peak_memory_bytes", e.peak_memory_bytes},
                      {"memory_capacity_bytes", e.memory_capacity_bytes},
                      {"free_fraction", e.free_fraction},
                      {"tight", e.tight},
                      {"oom", e.oom}};
  if (!e.oom && e.reason.empty()) {
    j["step_time_s"] = e.step_time_s;
    j["tokens_per_s"] = e.tokens_per_s;
    j["tflops_per_gpu"] = e.tflops_per_gpu;
    j["mfu"] = e.mfu;
    j["time_to_train_s"] = e.time_to_train_s;
    j["gpu_hours"] = gpu_hours(e);
    j["breakdown"] = {{"compute_s", e.compute_s},
                      {"exposed_comm_s", e.exposed_comm_s},
                      {"bubble_s", e.bubble_s},
                      {"communication_s", e.communication_s}};
  } else {
    j["reason"] = e.reason;
  }
  return j;
}

nlohmann::json launch_json(const LaunchLine& l) {
  nlohmann::json j = {{"command", l.command}, {"device", l.device},     {"rank_vms", l.rank_vms},
                      {"comm", l.comm},       {"hostfile", l.hostfile}, {"notes", l.notes}};
  if (!l.hostfile_path.empty()) j["hostfile_path"] = l.hostfile_path;
  if (!l.simulate_only.empty()) j["simulate_only"] = l.simulate_only;
  return j;
}

void write_json(const std::string& path, const nlohmann::json& j) { JsonOutput{path}.write(j); }

// The three measures of a plan, the objective's first: time to train, GPU-hours, tokens/s.
template <typename T>
std::vector<T> objective_first(Objective objective, T to_train, T gpu_hours, T tokens_per_s) {
  if (objective == Objective::gpu_hours) return {gpu_hours, to_train, tokens_per_s};
  if (objective == Objective::tokens_per_s) return {tokens_per_s, to_train, gpu_hours};
  return {to_train, gpu_hours, tokens_per_s};
}

// The ranked table: the objective's column first among the numbers, sizes in one unit.
void print_table(const SearchResult& r, const Slice& slice, const Options& o, Objective objective,
                 int ties) {
  const int width = table_width(o.wide);
  const std::string types = gpu_types_line(slice);
  if (!types.empty()) say(width, stdout, "{}\n", types);
  std::vector<double> capacities;
  for (const auto& e : r.ranked) capacities.push_back(e.memory_capacity_bytes);
  const double unit = memory_unit_bytes(capacities);
  const char* unit_name = unit >= 1024.0 * 1024 * 1024 ? "GiB" : "MiB";
  // GPUs that every row shares are said once above the table: the room goes to the plans, whose
  // column is the one cut when nothing else fits.
  const int rows = std::min<int>(o.top, int(r.ranked.size()));
  std::set<std::string> gpu_cells;
  for (int i = 0; i < rows; ++i)
    gpu_cells.insert(gpu_cell(slice, r.ranked[i].candidate.subset.gpus));
  const bool one_gpu_set = gpu_cells.size() == 1 && !o.wide;
  if (one_gpu_set) say(width, stdout, "GPUs of every row: {}\n", *gpu_cells.begin());
  std::vector<TableColumn> columns = {
      {"#", true}, {"plan", false, 0, true}, {"technique", false, 1}};
  if (!one_gpu_set) columns.push_back({"GPUs", false});
  const auto ranked = objective_first<TableColumn>(objective, {"to train", true}, {"GPU-h", true},
                                                   {"tokens/s", true});
  columns.insert(columns.end(), ranked.begin(), ranked.end());
  columns.insert(
      columns.end(),
      {{"step s", true, 2}, {"TFLOP/s", true, 3}, {fmt::format("mem {} free", unit_name), true}});
  TextTable table(columns);
  for (int i = 0; i < rows; ++i) {
    const Evaluated& e = r.ranked[i];
    const std::string t = format_train_time(e.time_to_train_s), g = format_gpu_hours(gpu_hours(e)),
                      k = fmt::format("{:.0f}", e.tokens_per_s);
    std::vector<std::string> row = {fmt::format("{}{}", i + 1, i > 0 && i < ties ? "=" : ""),
                                    to_short_string(e.candidate.plan),
                                    technique_name(e.candidate.plan)};
    if (!one_gpu_set) row.push_back(gpu_cell(slice, e.candidate.subset.gpus));
    const auto cells = objective_first<std::string>(objective, t, g, k);
    row.insert(row.end(), cells.begin(), cells.end());
    row.insert(row.end(), {fmt::format("{:.3f}", e.step_time_s),
                           fmt::format("{:.2f}", e.tflops_per_gpu), memory_cell(e, unit)});
    table.add_row(row);
  }
  const RenderedTable t = table.render(table_width(o.wide));
  fmt::print("{}", t.text);  // fits the width itself
  say(width, stdout,
      "ranked by {} (--objective time-to-train | tokens-per-s | gpu-hours); tight: less than "
      "{:g}% of a GPU free (--memory-headroom), ranked after plans with headroom within {:g}%{}\n",
      to_string(objective), 100 * o.search.memory_headroom, 100 * SearchOptions{}.tight_tolerance,
      t.dropped.empty() ? ""
                        : fmt::format("; left out to fit {} columns: {} (--wide shows them)",
                                      table_width(o.wide), fmt::join(t.dropped, ", ")));
  if (o.search.tokens == 0 && o.search.epochs == 0 && o.search.dataset_tokens == 0)
    say(width, stdout,
        "to train: the time for {:.3g} tokens, the study's amount (its epochs of an assumed data "
        "set size), not a pretraining run's: give yours with --tokens N, or --epochs and "
        "--dataset-tokens\n",
        o.search.train_tokens().tokens);
}

// What was searched, what was skipped and why, and whether the answer is exact.
void print_search_summary(const SearchResult& r, int top, Objective objective, int width) {
  say(width, stdout,
      "{} on {} of {} ({} of sites) in {:.2f} s: {} compiled, {} out of memory, {} simulated;\n"
      "  skipped: {} with recomputation that memory does not need (the same plan without it "
      "fits and is faster), {} with overlap=off whose overlapped twin fits (never slower), {} "
      "and {} whose lower bound cannot reach the top {}\n",
      counted(r.enumerated, "plan"), r.subsets_opened, counted(r.subsets, "GPU subset"),
      counted(r.site_sets, "set"), r.seconds, r.compiled, r.out_of_memory_count, r.ranked.size(),
      r.skipped_recompute, r.skipped_overlap_off, counted(r.bounded, "plan"),
      counted(r.subsets_bounded, "subset"), top);
  const double gap = r.gap(objective);
  std::string what = r.space_exact ? "every set of sites (interchangeable sites as one)"
                                   : fmt::format(
                                         "the sets leaving out up to {} sites, single "
                                         "sites, pairs and nearest-site clusters",
                                         r.sites_left_out_at_most);
  if (r.budget_spent) what += ", until the search's work budget was spent";
  if (gap == 0)
    say(width, stdout, "  exact: searched {}; no plan left out can beat the best\n\n", what);
  else
    say(width, stdout,
        "  not exact: searched {}; a plan not simulated could be at most {:.1f}% better than the "
        "best (its lower bound)\n\n",
        what, 100 * gap);
}

void run_study_rule(Options& o) {
  auto [model, slice, options] = o.search.resolve();
  const int width = table_width(o.wide);
  std::FILE* text = o.json == "-" ? stderr : stdout;  // standard output carries the JSON alone
  say(width, text, "fabtrain plan --rule study: {}\n", o.search.describe());
  const int seq = options.space.seq > 0 ? options.space.seq : model.n_ctx;
  const RuleDecision d =
      showing_progress("following the study's procedure",
                       [&m = model, &s = slice, &op = options] { return study_rule(m, s, op); });
  say(width, text, "\nthe study's procedure:\n");
  for (const auto& s : d.steps) say(width, text, "  rule: {}\n", s);
  if (!d.found)
    fail("the study's rule finds no technique that fits {} on {}", model.name, slice.name);
  say(width, text,
      "study's choice: {} ({}) on {}: step {:.3f} s, {:.2f} TFLOP/s per GPU, {:.0f} tokens/s, "
      "{} to train\n",
      to_short_string(d.chosen.candidate.plan), d.technique,
      describe_gpus(slice, d.chosen.candidate.subset.gpus), d.chosen.step_time_s,
      d.chosen.tflops_per_gpu, d.chosen.tokens_per_s, format_train_time(d.chosen.time_to_train_s));
  SearchOptions one = options;
  one.keep_top = 1;
  const SearchResult r = search_showing_progress(model, slice, one);
  if (r.ranked.empty())
    fail("the search finds no plan of {} that fits on {}", model.name, slice.name);
  const Evaluated& best = r.ranked.front();
  say(width, text,
      "fabtrain's search ({}): {} ({}) on {}: step {:.3f} s, {:.0f} tokens/s, {} to train, "
      "{} GPU-hours\n",
      to_string(options.objective), to_short_string(best.candidate.plan),
      technique_name(best.candidate.plan), describe_gpus(slice, best.candidate.subset.gpus),
      best.step_time_s, best.tokens_per_s, format_train_time(best.time_to_train_s),
      format_gpu_hours(gpu_hours(best)));
  const std::string difference = rule_vs_search(slice, d, best, r.enumerated, options.objective);
  say(width, text, "{}\n", difference);
  write_json(o.json,
             {{"rule", "study"},
              {"steps", d.steps},
              {"chosen", to_json(d.chosen, slice)},
              {"search_best", to_json(best, slice)},
              {"difference", difference},
              {"launch", launch_json(written_launch_line(o.search.model, slice, d.chosen, seq))}});
  print_launch(text, o.search.model, slice, d.chosen, seq);
}

void check_options(const Options& o) {
  if (o.rule != "search") fail("--rule={} is not known (search or study)", o.rule);
  if (o.break_even != "auto" && o.break_even != "on" && o.break_even != "off")
    fail("--break-even={} is not known (auto: when the slice has at most 3 site pairs; on; off)",
         o.break_even);
  if (o.top < 1) fail("--top={} must be at least 1", o.top);
}

[[noreturn]] void fail_nothing_fits(const SearchResult& r, const ModelSpec& model,
                                    const Slice& slice) {
  double least = 0;
  std::string reason;
  for (const auto& e : r.out_of_memory)
    if (least == 0 || e.peak_memory_bytes - e.memory_capacity_bytes < least)
      least = e.peak_memory_bytes - e.memory_capacity_bytes, reason = e.reason;
  fail("no plan of {} fits on {}: even the leanest plan is {} short ({})", model.name, slice.name,
       format_bytes(least), reason);
}

// The calibration's held-out step error, 0 without one.
double held_out_error(const SearchOptions& options) {
  return options.calibration && options.calibration->held_out_step_error
             ? *options.calibration->held_out_step_error
             : 0.0;
}

// How many plans from the top are within the held-out error of the best (1: the best alone).
int count_ties(const SearchResult& r, Objective objective, const SearchOptions& options) {
  const bool has_error = options.calibration && options.calibration->held_out_step_error;
  const double error = held_out_error(options);
  int ties = 1;
  if (has_error)
    while (ties < int(r.ranked.size()) &&
           cost(r.ranked[ties], objective) <= cost(r.ranked.front(), objective) * (1 + error))
      ++ties;
  return ties;
}

// Examples of distinct plans: overlap=off and large-bucket twins left out (they fit where their
// overlapped twin does, or not at all, by about the same bytes).
void print_out_of_memory(const SearchResult& r, int top, int width) {
  if (r.out_of_memory.empty()) return;
  say(width, stdout, "\nout of memory ({}; the study's crosses), e.g.:\n",
      counted(r.out_of_memory_count, "plan"));
  int shown = 0;
  for (const Evaluated& e : r.out_of_memory) {
    if (shown == top) break;
    const Plan& p = e.candidate.plan;
    if (!p.overlap || p.bucket_mib != Plan{}.bucket_mib) continue;
    say(width, stdout, "  x {} ({}): {}\n", to_short_string(p), technique_name(p), e.reason);
    ++shown;
  }
}

void print_answer(const SearchResult& r, const Slice& slice, const Options& o,
                  const SearchOptions& options, int ties) {
  const int width = table_width(o.wide);
  const Evaluated& best = r.ranked.front();
  print_search_summary(r, o.top, options.objective, width);
  print_table(r, slice, o, options.objective, ties);
  print_out_of_memory(r, o.top, width);
  for (const auto& f : r.failed)
    say(width, stdout, "  ! {} failed to simulate: {}\n", to_string(f.candidate.plan), f.reason);
  say(width, stdout,
      "\nbest: {} ({}) on {}: {} to train, {} GPU-hours, {:.0f} tokens/s, step {:.3f} s, "
      "{:.2f} TFLOP/s per GPU\n",
      to_string(best.candidate.plan), technique_name(best.candidate.plan),
      describe_gpus(slice, best.candidate.subset.gpus), format_train_time(best.time_to_train_s),
      format_gpu_hours(gpu_hours(best)), best.tokens_per_s, best.step_time_s, best.tflops_per_gpu);
  if (ties > 1)
    say(width, stdout,
        "tie: plans 1-{} are within the calibration's held-out step error ({:.1f}%, {}) of "
        "the best: the prediction cannot tell them apart\n",
        ties, 100 * held_out_error(options), options.calibration->source);
}

nlohmann::json why_json(const WinnerExplanation& why, const Slice& slice) {
  nlohmann::json j = {{"winner", why.winner}, {"rivals", nlohmann::json::array()}};
  for (size_t i = 0; i < why.rivals.size(); ++i) {
    const Rival& rv = why.rivals[i];
    nlohmann::json x = {{"family", to_string(rv.family)}, {"sentence", why.lines[i]}};
    if (rv.best) {
      x["best"] = to_json(*rv.best, slice);
      x["cost_ratio"] = rv.cost_ratio;
    }
    j["rivals"].push_back(x);
  }
  return j;
}

nlohmann::json break_even_json(const std::vector<PairBreakEvens>& evens) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : evens) {
    nlohmann::json x = {{"sites", nlohmann::json::array({p.site_a, p.site_b})},
                        {"rtt_ms", p.rtt_ms},
                        {"winner", p.winner},
                        {"sentence", p.sentence},
                        {"changes", nlohmann::json::array()}};
    for (const auto& c : p.changes)
      x["changes"].push_back({{"rtt_ms", c.rtt_ms}, {"below", c.below}, {"above", c.above}});
    j.push_back(x);
  }
  return j;
}

// No wall-clock time in the JSON: the same search gives the same bytes (the terminal says how
// long).
nlohmann::json search_json(const SearchResult& r, const ModelSpec& model, const Slice& slice,
                           const Options& o, const SearchOptions& options, int ties) {
  const Objective objective = options.objective;
  nlohmann::json j = {{"model", model.name},
                      {"slice", slice.name},
                      {"enumerated", r.enumerated},
                      {"exact", r.gap(objective) == 0},
                      {"gap", r.gap(objective)},
                      {"objective", to_string(objective)},
                      {"train_tokens", *options.train_tokens},
                      {"train_tokens_from", o.search.train_tokens().description}};
  const bool has_error = options.calibration && options.calibration->held_out_step_error;
  j["ranked"] = nlohmann::json::array();
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    j["ranked"].push_back(to_json(r.ranked[i], slice));
    if (has_error) j["ranked"].back()["tie_with_best"] = int(i) < ties;
  }
  j["out_of_memory"] = nlohmann::json::array();
  for (const auto& e : r.out_of_memory) j["out_of_memory"].push_back(to_json(e, slice));
  return j;
}

// The break-even round trips of each site pair, where asked for (auto: up to 3 pairs).
std::vector<PairBreakEvens> print_break_evens(const ModelSpec& model, const Slice& slice,
                                              const SearchOptions& options, const Options& o,
                                              bool quiet) {
  const int width = table_width(o.wide);
  const int pairs = int(slice.site_names().size() * (slice.site_names().size() - 1) / 2);
  std::vector<PairBreakEvens> evens;
  if (o.break_even == "on" || (o.break_even == "auto" && pairs <= 3))
    evens = showing_progress(
        fmt::format("computing the break-even round trips of {}", counted(pairs, "site pair")),
        [&] { return break_evens(model, slice, options); });
  if (!quiet && !evens.empty()) {
    say(width, stdout, "break-even round trips (each site pair's varied alone):\n");
    for (const auto& p : evens) say(width, stdout, "  {}\n", p.sentence);
  } else if (!quiet && pairs > 3 && o.break_even == "auto") {
    say(width, stdout,
        "break-even round trips: {} site pairs, left out (--break-even on computes them)\n", pairs);
  }
  return evens;
}

void run(Options& o) {
  if (o.rule == "study") return run_study_rule(o);
  check_options(o);
  auto [model, slice, options] = o.search.resolve();
  const int width = table_width(o.wide);
  const bool quiet = o.json == "-";
  std::FILE* info = quiet ? stderr : stdout;
  if (!quiet) say(width, stdout, "fabtrain plan: {}\n", o.search.describe());
  options.keep_top = o.top;            // the table's rows stay exact; the rest may be pruned
  options.best_of_each_family = true;  // and each family's best, for the "why" lines
  SimMemo memo;                        // the break-even searches reuse what this search learns
  PlanMemo compiled;
  options.memo = &memo;
  options.compiled = &compiled;
  const int seq = options.space.seq > 0 ? options.space.seq : model.n_ctx;
  const SearchResult r = search_showing_progress(model, slice, options);
  if (r.ranked.empty()) fail_nothing_fits(r, model, slice);
  const Evaluated& best = r.ranked.front();
  // Plans within the calibration's held-out error of the best cannot be told apart.
  const int ties = count_ties(r, options.objective, options);
  if (!quiet) print_answer(r, slice, o, options, ties);
  const WinnerExplanation why = explain_winner(r, options);
  if (!quiet) {
    say(width, stdout, "why: {}\n", why.winner);
    for (const auto& line : why.lines) say(width, stdout, "  {}\n", line);
  }
  const std::vector<PairBreakEvens> evens = print_break_evens(model, slice, options, o, quiet);
  nlohmann::json j = search_json(r, model, slice, o, options, ties);
  j["why"] = why_json(why, slice);
  j["break_even"] = break_even_json(evens);
  j["launch"] = launch_json(written_launch_line(o.search.model, slice, best, seq));
  write_json(o.json, j);
  print_launch(info, o.search.model, slice, best, seq);
}

Registration reg(50, [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "plan",
      "Search every plan of a model on a slice, rank them by one objective (default: time "
      "to train), say why the best wins and at which round trips it stops winning, and "
      "print the line that runs it (default: GPT-2 medium on the study's Utah + Amsterdam "
      "slice)");
  o->search.add_to(cmd);
  cmd->add_option("--top", o->top, "Rows to show")->capture_default_str();
  cmd->add_option("--json", o->json, "Write all results as JSON to FILE, or - for stdout");
  cmd->add_option(
      "--rule", o->rule,
      "search (default) or study: the study's selection procedure, next to the search's "
      "answer");
  cmd->add_option("--break-even", o->break_even,
                  "auto (when the slice has at most 3 site pairs), on or off: per site pair, the "
                  "round trip at which the winner changes")
      ->capture_default_str();
  cmd->add_flag("--wide", o->wide, "Show every column (default: fit $COLUMNS, else 100 columns)");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
