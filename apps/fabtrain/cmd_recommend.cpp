// fabtrain recommend: for each GPU count (and which sites) the best plan's time to train and
// GPU-hours, and the smallest count within a tolerance of the best.
#include <fmt/format.h>

#include "command.hpp"
#include "common/error.hpp"
#include "json_output.hpp"
#include "search_cli.hpp"
#include "selector/recommend.hpp"

namespace fabtrain {
namespace {

struct Options {
  SearchCli search;
  double tolerance = 0.10;
  JsonOutput json;
};

nlohmann::json to_json(const Recommendation& rec, const Slice& slice, double tokens) {
  nlohmann::json j = {{"train_tokens", tokens}, {"why", rec.why}, {"choices", nlohmann::json::array()}};
  for (size_t i = 0; i < rec.choices.size(); ++i) {
    const auto& c = rec.choices[i];
    j["choices"].push_back({{"gpus", c.gpus},
                            {"sites", c.sites},
                            {"where", describe_gpus(slice, c.best.candidate.subset.gpus)},
                            {"plan", to_string(c.best.candidate.plan)},
                            {"tokens_per_s", c.best.tokens_per_s},
                            {"time_to_train_s", c.time_to_train_s},
                            {"gpu_hours", c.gpu_hours},
                            {"recommended", int(i) == rec.chosen}});
  }
  return j;
}

void run(Options& o) {
  auto [model, slice, options] = o.search.resolve();
  const double tokens = o.search.train_tokens().value_or(1e9);
  options.train_tokens = tokens;
  std::FILE* text = o.json.text();
  fmt::print(text, "fabtrain recommend: {} tolerance={:.0f}%{}\n", o.search.describe(),
             100 * o.tolerance, o.search.train_tokens() ? "" : " (time to train for 1e9 tokens)");
  const SearchResult r = search(model, slice, options);
  const Recommendation rec = recommend(r, slice, tokens, o.tolerance);
  if (rec.choices.empty()) fail("no plan of {} fits on any GPUs of {}", model.name, slice.name);
  fmt::print(text, "\n{:>4}  {:<42} {:<36} {:>10} {:>10} {:>10}\n", "GPUs", "where", "best plan",
             "tokens/s", "to train", "GPU-hours");
  for (size_t i = 0; i < rec.choices.size(); ++i) {
    const auto& c = rec.choices[i];
    fmt::print(text, "{:>4}  {:<42} {:<36} {:>10.0f} {:>10} {:>10.1f}{}\n", c.gpus,
               describe_gpus(slice, c.best.candidate.subset.gpus), to_short_string(c.best.candidate.plan),
               c.best.tokens_per_s, format_duration(c.time_to_train_s), c.gpu_hours,
               int(i) == rec.chosen ? "  <- recommended" : "");
  }
  fmt::print(text, "\n{}\n", rec.why);
  o.json.write(to_json(rec, slice, tokens));
  fmt::print(text, "recommended: {}\n", exec_command(model, rec.choices[rec.chosen].best, options.space.seq));
}

Registration reg(60, [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "recommend", "For each GPU count and set of sites, the best plan's time to train and "
                   "GPU-hours; recommends the smallest count within a tolerance of the best");
  o->search.add_to(cmd);
  cmd->add_option("--tolerance", o->tolerance, "Throughput fraction a smaller count may lose")
      ->capture_default_str();
  o->json.add_to(cmd, "every GPU count's best plan and the recommendation");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
