// Options that take a list read it comma- or space-separated alike, in every subcommand at once:
// `--clusters tacc,utah-amst` and `--clusters tacc utah-amst` give the same two names.
#pragma once
#include <CLI/CLI.hpp>

namespace fabtrain {

inline void make_lists_comma_separated(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->nonpositional() && option->get_items_expected_max() > 1 &&
        option->get_delimiter() == '\0')
      option->delimiter(',');
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    make_lists_comma_separated(*sub);
}

}  // namespace fabtrain
