// fabtrain models [--json FILE|-]: the built-in models with their sizes.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "json_output.hpp"
#include "models/model_spec.hpp"

namespace fabtrain {
namespace {

void run(const JsonOutput& json) {
  if (json.wanted()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : builtin_models())
      out.push_back({{"name", m.name},
                     {"layers", m.n_layer},
                     {"hidden", m.n_embd},
                     {"heads", m.n_head},
                     {"context", m.n_ctx},
                     {"vocab", m.vocab_size},
                     {"parameters", m.parameters()}});
    json.write(out);
    if (json.to_stdout()) return;
  }
  fmt::print("{:<12} {:>6} {:>6} {:>5} {:>7} {:>6} {:>14}\n", "model", "layers", "hidden", "heads",
             "context", "vocab", "parameters");
  for (const auto& m : builtin_models())
    fmt::print("{:<12} {:>6} {:>6} {:>5} {:>7} {:>6} {:>14}\n", m.name, m.n_layer, m.n_embd,
               m.n_head, m.n_ctx, m.vocab_size, m.parameters());
}

Registration reg(10, [](CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List the built-in models and their sizes");
  auto json = std::make_shared<JsonOutput>();
  json->add_to(cmd, "the list");
  cmd->callback([json] { run(*json); });
});

}  // namespace
}  // namespace fabtrain
