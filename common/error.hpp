// The exception type for user-facing errors: bad input, impossible plans, missing files.
// Messages name the thing, the value and the rule ("pp=3 does not divide 24 layers").
// Programs catch it in main(), print "error: <what>" and exit non-zero.
// JobWideError: an Error that every rank of an MPI job meets together.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace fabtrain {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The ranks agreed on it with a collective, so they end normally together, without MPI_Abort.
// One rank reports it; on the others `reported_elsewhere` is set and main exits 1 without
// printing it a second time.
struct JobWideError : Error {
  JobWideError(const std::string& what, bool reported_elsewhere)
      : Error(what), reported_elsewhere(reported_elsewhere) {}
  bool reported_elsewhere;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace fabtrain
