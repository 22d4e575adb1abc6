// fabtrain study: the study's figures as predictions (each cluster, GPT-2 medium and large,
// each technique's TFLOP/s per GPU or its out-of-memory cross), as a table, an HTML report with
// the study's published measurement beside the prediction, and one SVG file per cluster.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "command.hpp"
#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/limits.hpp"
#include "json_output.hpp"
#include "search_cli.hpp"
#include "selector/study_report.hpp"

namespace fabtrain {
namespace {

struct Options {
  SearchCli search;
  std::vector<std::string> clusters = {"tacc", "utah-gpn", "utah-mass", "utah-amst"};
  std::vector<std::string> models = {"gpt2-medium", "gpt2-large"};
  std::string html = "study-report.html";
  JsonOutput json;
};

StudyReportContext context_of(const Options& o, const SearchOptions& options) {
  StudyReportContext c;
  c.command = invoked_command();
  c.version = FABTRAIN_PROJECT_VERSION;
  c.date = fmt::format("{:%Y-%m-%d %H:%M} UTC", fmt::gmtime(std::time(nullptr)));
  c.calibration = o.search.calibration_files.empty()
                      ? "none: the catalog's defaults"
                      : calibration_names(o.search.calibration_files);
  c.measured = load_study_measurement();
  c.train_tokens = options.train_tokens;
  c.assumptions = {
      fmt::format("every GPU of each cluster; global batch {} (the study does not state it; Alpa's "
                  "GPT-2 example, which the study appears to follow, uses 8 per GPU)",
                  options.space.global_batch > 0 ? std::to_string(options.space.global_batch)
                                                 : "8 sequences per GPU"),
      fmt::format("sequence {}, precision {} (Alpa's default)",
                  options.space.seq > 0 ? std::to_string(options.space.seq) : "the model's context",
                  options.space.precision_where_supported
                      ? "auto (tf32 where every GPU of a plan has it, else fp32)"
                      : to_string(options.space.precision)),
      "each technique's fastest plan of fabtrain's search (microbatches, schedule, recomputation, "
      "layer split): the study does not state Alpa's choices",
      "TFLOP/s per GPU by Alpa's formula (alpa.util.compute_gpt_tflops), as the study reports",
      "links, GPUs and NICs from the catalog (platforms/data/catalog.yaml; estimated round trips "
      "are marked so in `fabtrain slice show`), unless the calibration replaces them",
  };
  return c;
}

void run(Options& o) {
  const SearchOptions options = o.search.resolve().options;
  // Names, and clusters past the searches' GPU limit, are refused before any output.
  for (const auto& cluster : o.clusters)
    check_limit(fmt::format("cluster {}: the GPU count to search", cluster),
                load_slice(cluster).gpu_count(), limits::searched_gpus);
  for (const auto& model : o.models) load_model(model);
  std::FILE* text = o.json.text();
  fmt::print(text, "fabtrain study: clusters {} models {}\n", fmt::join(o.clusters, ","),
             fmt::join(o.models, ","));
  const auto cells = study_cells(o.clusters, o.models, options);
  const StudyReportContext context = context_of(o, options);
  fmt::print(text, "{:<14} {:<12} {:<14} {:>11}  {}\n", "cluster", "model", "technique",
             "TFLOP/s/GPU", "plan");
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : cells) {
    fmt::print(text, "{:<14} {:<12} {:<14} {:>11}  {}\n", c.cluster, c.model, c.technique,
               c.oom           ? "x OOM"
               : c.unavailable ? "n/a"
                               : fmt::format("{:.2f}", c.tflops_per_gpu),
               c.oom ? c.plan + ": " + c.note : c.plan);
    j.push_back({{"cluster", c.cluster},
                 {"model", c.model},
                 {"technique", c.technique},
                 {"oom", c.oom},
                 {"unavailable", c.unavailable},
                 {"plan", c.plan}});
    if (!c.oom && !c.unavailable) {
      j.back()["tflops_per_gpu"] = c.tflops_per_gpu;
      j.back()["step_time_s"] = c.step_time_s;
      j.back()["tokens_per_s"] = c.tokens_per_s;
    } else if (c.oom) {
      j.back()["reason"] = c.note;
    }
  }
  write_text_atomically(o.html, study_html(cells, context), "--html");
  fmt::print(text, "report: {}\n", o.html);
  // Beside the page, one SVG per cluster (same scale) for a paper: study-report-<cluster>.svg.
  const std::filesystem::path page(o.html);
  for (const auto& [cluster, svg] : study_svgs(cells)) {
    const auto file = page.parent_path() / (page.stem().string() + "-" + cluster + ".svg");
    write_text_atomically(file.string(), svg, "--html");
    fmt::print(text, "figure: {}\n", file.string());
  }
  o.json.write({{"cells", j},
                {"measured",
                 {{"source", context.measured.source},
                  {"slice", context.measured.slice},
                  {"data_parallel_minutes", context.measured.data_parallel_minutes},
                  {"pipeshard_minutes", context.measured.pipeshard_minutes}}}});
}

Registration reg(70, [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("study",
                                 "The FABRIC study's figures as predictions: each "
                                 "technique's TFLOP/s per GPU on each cluster");
  o->search.add_to(cmd, false);
  cmd->add_option("--clusters", o->clusters, "Slices to evaluate (comma- or space-separated)")
      ->capture_default_str();
  cmd->add_option("--models", o->models, "Models to evaluate (comma- or space-separated)")
      ->capture_default_str();
  cmd->add_option("--html", o->html,
                  "Where to write the HTML report; its charts are also written beside it as "
                  "<name>-<cluster>.svg")
      ->capture_default_str();
  o->json.add_to(cmd, "every cell of the table");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
