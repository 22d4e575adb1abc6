#include "search_cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "calibrate/coverage.hpp"
#include "calibrate/merge_calibrations.hpp"
#include "common/atomic_file.hpp"
#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "common/limits.hpp"
#include "common/text_table.hpp"
#include "common/text_wrap.hpp"
#include "say.hpp"
#include "selector/enumerate.hpp"
#include "selector/launch_line.hpp"
#include "selector/site_sets.hpp"

namespace fabtrain {

void SearchCli::add_to(CLI::App* cmd, bool with_slice) {
  cmd->add_option("--model", model, "Built-in model or a GPT-2 config.json")->capture_default_str();
  if (with_slice)
    cmd->add_option("--slice", slice, "Built-in slice name or slice YAML file")
        ->capture_default_str();
  cmd->add_option("--batch", batch,
                  "Global batch in sequences (default: 8 per GPU of each plan, as in Alpa's GPT-2 "
                  "example that the study appears to follow)");
  cmd->add_option("--seq", seq, "Sequence length (default: the model's context)");
  cmd->add_option(
      "--tokens", tokens,
      "Tokens to train, for time to train (default: the study's 20 epochs of an assumed "
      "1.52e6-token data set, selector/data/study_training.yaml)");
  cmd->add_option("--epochs", epochs, "Epochs over the data set (default: the study's 20)");
  cmd->add_option("--dataset-tokens", dataset_tokens,
                  "Tokens in one epoch of the data set (default: the study's, assumed)");
  cmd->add_option("--wan-latency-ms", wan_latency_ms,
                  "Override every inter-site round-trip latency (what-if)");
  cmd->add_option(
      "--communicator", communicator,
      "Communicator profile to assume (catalog communicators: nccl-socket, openmpi-tcp; "
      "default: the slice's)");
  add_calibration_option(cmd, calibration_files);
  cmd->add_option(
      "--catalog", catalog_file,
      "Catalog YAML adding or replacing GPU types, NICs and sites (the built-in rules)");
  cmd->add_option(
         "--precision", precision,
         "fp32; tf32 (tensor cores, Ampere and newer); fp16 or bf16 (mixed precision, "
         "fp32 master weights); or auto: tf32 on the GPUs that have it, fp32 on the others "
         "(one precision per plan: a plan mixing GPUs without tf32 runs fp32)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16", "auto"}))
      ->capture_default_str();
  cmd->add_option("--objective", objective,
                  "What the search ranks by: time-to-train, tokens-per-s or gpu-hours")
      ->capture_default_str();
  add_memory_headroom_option(cmd, memory_headroom);
  cmd->add_option("--workers", workers,
                  "Simulations at once, each in a process of its own (default: one per core)");
}

void add_calibration_option(CLI::App* cmd, std::vector<std::string>& files) {
  cmd->add_option("--calibration", files,
                  "Calibration YAML from `fabtrain calibrate`; several (one per GPU type or link "
                  "class) are merged as `fabtrain calibrate merge` merges them");
}

std::string calibration_names(const std::vector<std::string>& files) {
  return fmt::format("{}", fmt::join(files, " + "));
}

namespace {

// A precision the slice's GPU types lack is refused before the search, naming them.
void check_precision_on(const Slice& slice, Precision precision) {
  std::set<std::string> lacking;
  for (const auto& g : slice.gpus())
    if (!has_precision(*g.type, precision)) lacking.insert(g.type->name);
  if (lacking.empty()) return;
  std::string names;
  for (const auto& n : lacking) names += (names.empty() ? "" : ", ") + n;
  fail(
      "--precision {}: {} {} no {} peak in the catalog; --precision auto runs {} where the GPUs "
      "have it and fp32 elsewhere",
      to_string(precision), names, lacking.size() == 1 ? "has" : "have", to_string(precision),
      to_string(precision));
}

}  // namespace

SearchSetup SearchCli::resolve() {
  SearchSetup setup{load_model(model), load_slice(slice, catalog_with(catalog_file)), {}};
  SearchOptions& options = setup.options;
  check_limit(fmt::format("slice {}: the GPU count to search", setup.slice.name),
              setup.slice.gpu_count(), limits::searched_gpus);
  if (wan_latency_ms >= 0) override_wan_latency(setup.slice, wan_latency_ms / 1000);
  if (!communicator.empty()) use_communicator(setup.slice, communicator);
  communicator = setup.slice.communicator.name;  // what describe() reports as assumed
  if (!calibration_files.empty()) {
    calibration = calib::load_calibrations(calibration_files, "--calibration");
    options.calibration = &calibration;
    print_calibration_warnings(calibration, setup.slice);
  }
  if (batch < 0) fail("--batch={} must be positive", batch);
  if (seq < 0 || seq > setup.model.n_ctx)
    fail("--seq={} must be between 1 and the model's context {}", seq, setup.model.n_ctx);
  if (tokens < 0) fail("--tokens={} must be positive", tokens);
  if (epochs < 0) fail("--epochs={} must be positive", epochs);
  if (dataset_tokens < 0) fail("--dataset-tokens={} must be positive", dataset_tokens);
  if (tokens > 0 && (epochs > 0 || dataset_tokens > 0))
    fail("--tokens={} and --epochs/--dataset-tokens both say how much to train: give one", tokens);
  options.space.global_batch = batch;
  options.space.seq = seq;
  options.space.precision_where_supported = precision == "auto";
  options.space.precision = precision == "auto" ? Precision::tf32 : parse_precision(precision);
  if (precision != "auto") check_precision_on(setup.slice, options.space.precision);
  options.workers = workers;
  options.objective = parse_objective(objective);
  check_memory_headroom(memory_headroom);
  options.memory_headroom = memory_headroom;
  options.train_tokens = train_tokens().tokens;
  return setup;
}

TrainingAmount SearchCli::train_tokens() const {
  if (tokens > 0) return {tokens, fmt::format("{:.3g} tokens (--tokens)", tokens)};
  const StudyTraining study = builtin_study_training();
  const double e = epochs > 0 ? epochs : study.epochs;
  const double d = dataset_tokens > 0 ? dataset_tokens : study.dataset_tokens;
  return {e * d,
          fmt::format("{:g} epochs{} of {:.3g} tokens{} = {:.3g} tokens", e,
                      epochs > 0 ? "" : " (the study's)", d,
                      dataset_tokens > 0 ? "" : " (the study's data set, size assumed)", e * d)};
}

std::string SearchCli::describe() const {
  return fmt::format(
      "model={} slice={} communicator={}\n"
      "  batch={} seq={} precision={} objective={} memory-headroom={:g}%{}{}\n  to train: {}",
      model, slice, communicator.empty() ? "the slice's" : communicator,
      batch > 0 ? std::to_string(batch) : "8/GPU", seq > 0 ? std::to_string(seq) : "context",
      precision, objective, 100 * memory_headroom,
      wan_latency_ms >= 0 ? fmt::format(" wan-latency={}ms", wan_latency_ms) : "",
      calibration_files.empty() ? " calibration=catalog defaults"
                                : " calibration=" + calibration_names(calibration_files),
      train_tokens().description);
}

std::string SearchCli::assumed_amount() const {
  if (tokens > 0 || epochs > 0) return "";
  return fmt::format(
      "time to train: for {:.3g} tokens, the study's; give yours with --tokens N or --epochs E",
      train_tokens().tokens);
}

SearchResult search_showing_progress(const ModelSpec& model, const Slice& slice,
                                     const SearchOptions& options, const std::string& what) {
  return showing_progress(
      fmt::format("searching {} of {} on {} ({}, {})", what, model.name, slice.name,
                  counted(slice.gpu_count(), "GPU"), counted(slice.site_names().size(), "site")),
      [&] { return search(model, slice, options); });
}

namespace {
std::string short_type(const std::string& name) {
  return name.rfind("GPU_", 0) == 0 ? name.substr(4) : name;
}
}  // namespace

std::string gpu_types_line(const Slice& slice) {
  std::set<std::string> types;
  for (const auto& g : slice.gpus()) types.insert(g.type->name);
  return types.size() == 1 ? "GPUs: " + *types.begin() + " (every GPU of the slice)" : "";
}

std::string gpu_cell(const Slice& slice, const std::vector<int>& gpus) {
  const bool one_type = !gpu_types_line(slice).empty();
  // A class of interchangeable sites shows its members after its first: the row stands for each.
  std::map<std::string, std::string> shown;
  for (const auto& c : site_classes(slice))
    shown[c.sites.front()] = fmt::format("{}", fmt::join(c.sites, "|"));
  const auto groups = count_gpus_by(slice, gpus, [&](const SliceGpu& g) {
    const std::string& site = slice.vms[g.vm].site;
    return (one_type ? "" : short_type(g.type->name)) + "@" +
           (shown.count(site) ? shown.at(site) : site);
  });
  std::string out;
  for (const auto& [key, n] : groups)
    out += fmt::format("{}{}{}{}", out.empty() ? "" : "+", n, one_type ? "" : "x", key);
  return out;
}

double memory_unit_bytes(const std::vector<double>& capacities) {
  constexpr double MiB = 1024.0 * 1024, GiB = 1024 * MiB;
  for (double c : capacities)
    if (c >= GiB) return GiB;
  return MiB;
}

void add_memory_headroom_option(CLI::App* cmd, double& headroom) {
  cmd->add_option("--memory-headroom", headroom,
                  "Fraction of each GPU's memory a plan should leave free; a plan leaving less is "
                  "shown as tight and not recommended while one with headroom is within 10% of "
                  "it (the memory model misses published peaks by about 10%, see "
                  "check-published, and an out-of-memory failure costs the reservation); 0 "
                  "turns it off")
      ->capture_default_str();
}

void check_memory_headroom(double headroom) {
  if (!(headroom >= 0 && headroom < 1))
    fail("--memory-headroom={} must be at least 0 and below 1 (a fraction of a GPU's memory)",
         headroom);
}

std::string memory_cell(const Evaluated& e, double unit) {
  return fmt::format("{:.1f}/{:.1f} {:.0f}%{}", e.peak_memory_bytes / unit,
                     e.memory_capacity_bytes / unit, 100 * e.free_fraction,
                     e.tight ? " tight" : "");
}

std::string launch_hostfile_path(const Slice& slice) {
  namespace fs = std::filesystem;
  const fs::path path(slice.path);
  const bool builtin = path.parent_path().lexically_normal() ==
                       fs::path(source_dir() + "/platforms/data/slices").lexically_normal();
  if (slice.path.empty() || builtin) return "";
  return (path.parent_path() / (path.stem().string() + ".hosts")).string();
}

LaunchLine written_launch_line(const std::string& model_arg, const Slice& slice, const Evaluated& e,
                               int seq) {
  const std::string path = launch_hostfile_path(slice);
  LaunchLine line = launch_line(model_arg, slice, e, seq, path);
  if (path.empty() || !line.simulate_only.empty()) return launch_line(model_arg, slice, e, seq);
  try {
    write_text_atomically(path, line.hostfile, "the hostfile");
  } catch (const Error& err) {
    fmt::print(stderr, "warning: {}; the launch line places ranks with --host instead\n",
               err.what());
    return launch_line(model_arg, slice, e, seq);
  }
  return line;
}

void print_calibration_warnings(const Calibration& calibration, const Slice& slice) {
  for (const auto& w : calibration_warnings(calibration, slice))
    fmt::print(stderr, "{}\n", wrap_text("warning: " + w, table_width(false)));
}

void print_launch(std::FILE* out, const std::string& model_arg, const Slice& slice,
                  const Evaluated& e, int seq) {
  const LaunchLine line = written_launch_line(model_arg, slice, e, seq);
  const int width = table_width(false);
  if (!line.simulate_only.empty()) {
    fmt::print(out, "{}\nthe plan's line would be: {}\n",
               wrap_text("not runnable as simulated: " + line.simulate_only, width), line.command);
    return;
  }
  fmt::print(out, "recommended: {}\n", line.command);
  std::vector<std::string> notes;
  if (!line.hostfile_path.empty())
    notes.push_back(fmt::format("hostfile {} written: ranks to VMs in the plan's device order",
                                line.hostfile_path));
  else
    notes.push_back("--host: ranks to VMs in the plan's device order");
  notes.insert(notes.end(), line.notes.begin(), line.notes.end());
  notes.push_back("TRAIN_TOKENS.bin: your llm.c token shards, e.g. from fabtrain-exec tokenize");
  notes.push_back(
      fmt::format("first check the VMs: the same mpirun prefix with fabtrain-exec preflight --data "
                  "TRAIN_TOKENS.bin{}{}",
                  line.device == "cuda" ? " --device cuda" : "",
                  " --slice " + (launch_hostfile_path(slice).empty() ? slice.name : slice.path)));
  for (const auto& n : notes) fmt::print(out, "  {}\n", wrap_text(n, width - 2, 4));
}

}  // namespace fabtrain
