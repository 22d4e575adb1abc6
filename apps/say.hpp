// Prose of both programs that fits the terminal: each line filled to the tables' width
// ($COLUMNS, else 100; --wide: as it comes), its continuation lines indented two more; and the
// one progress line that work taking seconds shows on a terminal.
#pragma once
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

#include "common/text_table.hpp"
#include "common/text_wrap.hpp"

namespace fabtrain {

template <typename... Args>
void say(int width, std::FILE* out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(out, "{}", fit_lines(fmt::format(format, std::forward<Args>(args)...), width));
}

// "<what>..." on standard error while `work` runs, when that is a terminal (a search prints
// nothing else for seconds), erased when it ends or throws; cut to the width so that erasing
// its one line erases all of it. Returns what `work` returns.
template <typename Work>
auto showing_progress(const std::string& what, Work&& work) {
  struct Line {
    bool shown = isatty(STDERR_FILENO);
    explicit Line(const std::string& text) {
      if (shown) fmt::print(stderr, "{}", text.substr(0, std::size_t(table_width(false) - 1)));
    }
    ~Line() {
      if (shown) fmt::print(stderr, "\r\033[K");
    }
  } line(what + "...");
  return work();
}

}  // namespace fabtrain
