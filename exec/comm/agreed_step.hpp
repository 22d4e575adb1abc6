// A step of a job's start that one rank takes alone (rank 0 locking the checkpoint folder), its
// outcome shared with every rank by one all-reduce before anything else collective: when it
// fails, all ranks end together with exit 1 and the failing rank's message, no MPI_Abort (under
// Open MPI, MPI_Abort adds "ORTE_ERROR_LOG" lines after the message).
#pragma once
#include <functional>

#include "exec/comm/communicator.hpp"

namespace fabtrain {

// Runs `step` on this rank (a no-op on ranks that have no part in it), then tells every rank of
// `group` whether it threw an Error on any. Such an Error ends every rank as a JobWideError: the
// rank that met it reports it, the others exit 1 quietly. Other exceptions pass through as they
// are (the caller's MPI_Abort takes the job down).
void run_agreed_step(Communicator& comm, int group, const std::function<void()>& step);

}  // namespace fabtrain
