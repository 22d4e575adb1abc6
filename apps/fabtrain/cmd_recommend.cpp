// fabtrain recommend: the plan search with a GPU-count tolerance. For each GPU count (and which
// sites) the best plan's time to train and GPU-hours, and the smallest count whose objective is
// within the tolerance of the best.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "command.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "common/text_table.hpp"
#include "json_output.hpp"
#include "say.hpp"
#include "search_cli.hpp"
#include "selector/recommend.hpp"

namespace fabtrain {
namespace {

struct Options {
  SearchCli search;
  double tolerance = 0.10;
  bool wide = false;
  JsonOutput json;
};

nlohmann::json to_json(const Recommendation& rec, const Slice& slice, double tokens) {
  nlohmann::json j = {
      {"train_tokens", tokens}, {"why", rec.why}, {"choices", nlohmann::json::array()}};
  for (size_t i = 0; i < rec.choices.size(); ++i) {
    const auto& c = rec.choices[i];
    j["choices"].push_back({{"gpus", c.gpus},
                            {"sites", c.sites},
                            {"where", describe_gpus(slice, c.best.candidate.subset.gpus)},
                            {"plan", to_string(c.best.candidate.plan)},
                            {"tokens_per_s", c.best.tokens_per_s},
                            {"time_to_train_s", c.time_to_train_s},
                            {"gpu_hours", c.gpu_hours},
                            {"peak_memory_bytes", c.best.peak_memory_bytes},
                            {"memory_capacity_bytes", c.best.memory_capacity_bytes},
                            {"tight", c.best.tight},
                            {"recommended", int(i) == rec.chosen}});
  }
  return j;
}

void run(Options& o) {
  auto [model, slice, options] = o.search.resolve();
  options.tight_tolerance = o.tolerance;
  const double tokens = *options.train_tokens;
  const Objective objective = options.objective;
  std::FILE* text = o.json.text();
  const int width = table_width(o.wide);
  say(width, text, "fabtrain recommend: {}\n", o.search.describe());
  const std::string amount = o.search.assumed_amount();
  if (!amount.empty()) say(width, text, "  {}\n", amount);
  say(width, text,
      "  the search of `fabtrain plan` (every GPU set's best kept exact), then the fewest GPUs "
      "whose {} is within --tolerance {:.0f}% of the best\n",
      objective == Objective::gpu_hours ? "GPU-hours" : "time to train", 100 * o.tolerance);
  const SearchResult r = search_showing_progress(model, slice, options);
  const Recommendation rec = recommend(r, slice, tokens, o.tolerance, objective);
  if (rec.choices.empty()) fail("no plan of {} fits on any GPUs of {}", model.name, slice.name);
  const std::string types = gpu_types_line(slice);
  if (!types.empty()) say(width, text, "\n{}\n", types);
  TextTable table({{"GPUs", true},
                   {"where", false, 0, true},
                   {"best plan", false, 0, true},
                   {"to train", true},
                   {"GPU-h", true},
                   {"tokens/s", true, 2},
                   {"mem GiB free", true, 1},
                   {"", false}});
  for (size_t i = 0; i < rec.choices.size(); ++i) {
    const auto& c = rec.choices[i];
    table.add_row({std::to_string(c.gpus), gpu_cell(slice, c.best.candidate.subset.gpus),
                   to_short_string(c.best.candidate.plan), format_train_time(c.time_to_train_s),
                   format_gpu_hours(c.gpu_hours), fmt::format("{:.0f}", c.best.tokens_per_s),
                   memory_cell(c.best, 1024.0 * 1024 * 1024),
                   int(i) == rec.chosen ? "<- chosen" : ""});
  }
  const RenderedTable rendered = table.render(width);
  fmt::print(text, "{}", rendered.text);
  if (!rendered.dropped.empty())
    say(width, text, "left out to fit {} columns: {} (--wide shows them)\n", width,
        fmt::join(rendered.dropped, ", "));
  say(width, text, "\n{}\n", rec.why);
  o.json.write(to_json(rec, slice, tokens));
  print_launch(text, o.search.model, slice, rec.choices[rec.chosen].best,
               options.space.seq > 0 ? options.space.seq : model.n_ctx);
}

Registration reg(60, [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "recommend",
      "The plan search with a GPU-count tolerance: for each GPU count and set of "
      "sites the best plan's time to train and GPU-hours; recommends the smallest "
      "count within the tolerance of the best");
  o->search.add_to(cmd);
  cmd->add_option(
         "--tolerance", o->tolerance,
         "Fraction of the best objective (time to train, or GPU-hours) a smaller count may "
         "lose")
      ->capture_default_str();
  cmd->add_flag("--wide", o->wide, "Show every column uncut (default: fit $COLUMNS, else 100)");
  o->json.add_to(cmd, "every GPU count's best plan and the recommendation");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
