// Subcommands register themselves: one file per subcommand defines a static Registration whose
// setup adds a CLI11 subcommand (options and help from one table) and its callback. main()
// runs whichever was chosen. Errors (fabtrain::Error) propagate to main, which prints them.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace fabtrain {

struct CommandSpec {
  int order;  // position in --help
  std::function<void(CLI::App&)> setup;
};

inline std::vector<CommandSpec>& commands() {
  static std::vector<CommandSpec> all;
  return all;
}

// The command line as typed (program name and arguments), for reports that say how they were made.
inline std::string& invoked_command() {
  static std::string line;
  return line;
}

struct Registration {
  Registration(int order, std::function<void(CLI::App&)> setup) {
    commands().push_back({order, std::move(setup)});
  }
};

}  // namespace fabtrain
