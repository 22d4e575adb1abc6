// What a run says when its plan asks for overlap (overlap=on) and its communicator cannot give
// it (Communicator::can_overlap false: e.g. MPI with --mpi-progress none): the starts then
// complete only in their waits, so the run is correct but its communication is not hidden.
// train and replay print this warning on rank 0 rather than block silently.
// Not here: the communicators (communicator.hpp).
#pragma once
#include <string>

#include "exec/comm/communicator.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

// Empty when the plan does not ask for overlap or the communicator can overlap.
std::string overlap_warning(const Plan& plan, const Communicator& comm);

}  // namespace fabtrain
