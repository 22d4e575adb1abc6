// The one exception type for user-facing errors: bad input, impossible plans, missing files.
// Messages name the thing, the value and the rule ("pp=3 does not divide 24 layers").
// Programs catch it in main(), print "error: <what>" and exit non-zero.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace fabtrain {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace fabtrain
