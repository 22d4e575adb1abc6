// Every rank's instruction timings of one step, gathered on every rank over a group of all ranks
// (one all-gather of floats: microseconds from the step start), for the run record and trace.
// Shared by train and replay. Not here: taking the timings (the players) or writing them.
#pragma once
#include <vector>

#include "exec/communicator.hpp"
#include "exec/run_record.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

StepTimings gather_step_timings(Communicator& comm, int world_group, const Schedule& schedule,
                                const std::vector<InstructionTiming>& mine);

}  // namespace fabtrain
