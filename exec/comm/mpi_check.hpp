// MPI_CHECK(call): runs an MPI call and turns a failure into a fabtrain::Error naming the call,
// file:line, MPI's own message and a hint. Only for the MPI backend
// (exec/comm/mpi_communicator.cpp); the communicator sets MPI_ERRORS_RETURN so failures come back
// here instead of aborting silently.
#pragma once
#include <mpi.h>

#include "common/error.hpp"

namespace fabtrain::detail {

[[noreturn]] inline void mpi_failed(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail(
      "{}:{}: {} failed: {} (hint: a peer rank may have died or the ranks' schedules disagree; "
      "check the other ranks' messages)",
      file, line, call, text);
}

}  // namespace fabtrain::detail

#define MPI_CHECK(call)                                                           \
  do {                                                                            \
    const int mpi_check_code_ = (call);                                           \
    if (mpi_check_code_ != MPI_SUCCESS)                                           \
      ::fabtrain::detail::mpi_failed(mpi_check_code_, #call, __FILE__, __LINE__); \
  } while (0)
