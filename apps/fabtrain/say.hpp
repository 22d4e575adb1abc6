// Prose of the fabtrain commands that fits the terminal: each line filled to the tables' width
// ($COLUMNS, else 100; --wide: as it comes), its continuation lines indented two more.
#pragma once
#include <fmt/format.h>

#include <cstdio>
#include <utility>

#include "common/text_wrap.hpp"

namespace fabtrain {

template <typename... Args>
void say(int width, std::FILE* out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(out, "{}", fit_lines(fmt::format(format, std::forward<Args>(args)...), width));
}

}  // namespace fabtrain
