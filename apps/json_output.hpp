// --json FILE|-, the same in every subcommand of both programs: FILE gets the JSON (written
// atomically) and the terminal keeps its text; "-" puts the JSON alone on standard output, and
// whatever text the subcommand still prints goes to standard error.
#pragma once
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "common/atomic_file.hpp"

namespace fabtrain {

struct JsonOutput {
  std::string path;  // empty: no JSON

  void add_to(CLI::App* cmd, const std::string& what = "the results") {
    cmd->add_option("--json", path,
                    "Write " + what + " as JSON to FILE, or - for standard output alone")
        ->type_name("FILE|-");
  }
  bool wanted() const { return !path.empty(); }
  bool to_stdout() const { return path == "-"; }
  // Where the subcommand's text goes: standard error while standard output carries the JSON.
  std::FILE* text() const { return to_stdout() ? stderr : stdout; }
  void write(const nlohmann::json& j) const {
    if (!wanted()) return;
    if (to_stdout()) {
      fmt::print("{}\n", j.dump(2));
      std::fflush(stdout);
      return;
    }
    write_text_atomically(path, j.dump(2) + "\n", "--json");
  }
};

}  // namespace fabtrain
