// The shared body of both programs' main(): registered subcommands, one error path.
#pragma once
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>

#include "command.hpp"
#include "common/error.hpp"
#include "help_format.hpp"
#include "list_options.hpp"
#include "option_ranges.hpp"
#include "strict_options.hpp"

namespace fabtrain {

// "fabtrain foo": the word is named and the subcommands listed (CLI11 alone says "A subcommand
// is required"); empty when argv[1] is an option or a subcommand.
inline std::string unknown_subcommand_message(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->check_name(argv[1])) return "";
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return fmt::format("unknown subcommand '{}'; {}'s subcommands are: {} (see {} --help)", argv[1],
                     app.get_name(), names, app.get_name());
}

// "fabtrain plan": the program and the subcommand being parsed when an option was refused.
inline std::string help_command(CLI::App& app) {
  std::string line = app.get_name();
  for (CLI::App* sub = &app; !sub->get_subcommands().empty();) {
    sub = sub->get_subcommands().front();
    line += " " + sub->get_name();
  }
  return line;
}

inline int run_main(CLI::App& app, int argc, char** argv) {
  // Usage lines name the program as it is typed, not the absolute path it was started from.
  app.name(std::filesystem::path(argv[0]).filename().string());
  invoked_command() = app.get_name();
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const bool plain = word.find_first_of(" \t'\"$;&|<>*?") == std::string::npos && !word.empty();
    invoked_command() += " " + (plain ? word : "'" + word + "'");
  }
  // "fabtrain 0.1.0": the program's name and CMake's project(VERSION).
  app.set_version_flag("--version", app.get_name() + " " + FABTRAIN_VERSION,
                       "Print the version and exit");
  app.require_subcommand(1);
  fit_help_to_terminal(app);  // before the subcommands, which take their parent's
  auto& all = commands();
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.order < b.order; });
  for (auto& c : all) c.setup(app);
  apply_option_ranges(app);
  make_numbers_strict(app);
  make_lists_comma_separated(app);
  if (const std::string unknown = unknown_subcommand_message(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "error: %s\n", unknown.c_str());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s (see %s --help)\n", e.what(), help_command(app).c_str());
    return 1;
  } catch (const Error& e) {
    const auto* job_wide = dynamic_cast<const JobWideError*>(&e);
    if (job_wide && job_wide->reported_elsewhere) return 1;
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "error: out of memory: an input asks for more memory than this host has\n");
    return 1;
  } catch (const std::exception& e) {  // a library's own message: say it is not the user's words
    std::fflush(stdout);
    std::fprintf(stderr, "error: internal error (please report with the command): %s\n", e.what());
    return 1;
  }
  // The last flush of standard output fails on a full disk or a closed pipe: not a success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "error: standard output: write failed: %s\n", std::strerror(errno));
    return 1;
  }
  return 0;
}

}  // namespace fabtrain
