// The shared body of both programs' main(): registered subcommands, one error path.
#pragma once
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <new>
#include <string>

#include "command.hpp"
#include "common/error.hpp"
#include "strict_options.hpp"

namespace fabtrain {

inline int run_main(CLI::App& app, int argc, char** argv) {
  // "fabtrain 0.1.0": the program's name and CMake's project(VERSION).
  const std::string program = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "fabtrain";
  app.set_version_flag("--version", program + " " + FABTRAIN_VERSION, "Print the version and exit");
  app.require_subcommand(1);
  auto& all = commands();
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.order < b.order; });
  for (auto& c : all) c.setup(app);
  make_numbers_strict(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: out of memory: an input asks for more memory than this host has\n");
    return 1;
  } catch (const std::exception& e) {  // a library's own message: say it is not the user's words
    std::fflush(stdout);
    std::fprintf(stderr, "error: internal error (please report with the command): %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace fabtrain
