// fabtrain study: the study's figures as predictions (each cluster, GPT-2 medium and large,
// each technique's TFLOP/s per GPU or its out-of-memory cross), as a table and an HTML report.
#include <fmt/format.h>

#include <fstream>

#include "command.hpp"
#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "search_cli.hpp"
#include "selector/study_report.hpp"

namespace fabtrain {
namespace {

struct Options {
  SearchCli search;
  std::vector<std::string> clusters = {"tacc", "utah-gpn", "utah-mass", "utah-amst"};
  std::vector<std::string> models = {"gpt2-medium", "gpt2-large"};
  std::string html = "study-report.html";
};

void run(Options& o) {
  const SearchOptions options = o.search.resolve().options;
  fmt::print("fabtrain study: clusters {} models {}\n", fmt::join(o.clusters, ","),
             fmt::join(o.models, ","));
  const auto cells = study_cells(o.clusters, o.models, options);
  fmt::print("{:<10} {:<12} {:<14} {:>10}  {}\n", "cluster", "model", "technique", "TFLOP/s/GPU",
             "plan");
  for (const auto& c : cells)
    fmt::print("{:<10} {:<12} {:<14} {:>10}  {}\n", c.cluster, c.model, c.technique,
               c.oom ? "x OOM" : c.unavailable ? "n/a" : fmt::format("{:.2f}", c.tflops_per_gpu),
               c.oom ? c.plan + ": " + c.note : c.plan);
  write_text_atomically(o.html, study_html(cells), "--html");
  fmt::print("report: {}\n", o.html);
}

Registration reg(70, [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("study", "The FABRIC study's figures as predictions: each "
                                          "technique's TFLOP/s per GPU on each cluster");
  o->search.add_to(cmd, false);
  cmd->add_option("--clusters", o->clusters, "Slices to evaluate (comma- or space-separated)")
      ->capture_default_str();
  cmd->add_option("--models", o->models, "Models to evaluate (comma- or space-separated)")
      ->capture_default_str();
  cmd->add_option("--html", o->html, "Where to write the HTML report")->capture_default_str();
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
