// The shared body of both programs' main(): registered subcommands, one error path.
#pragma once
#include <algorithm>
#include <cstdio>

#include "command.hpp"
#include "common/error.hpp"

namespace fabtrain {

inline int run_main(CLI::App& app, int argc, char** argv) {
  app.require_subcommand(1);
  auto& all = commands();
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.order < b.order; });
  for (auto& c : all) c.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace fabtrain
