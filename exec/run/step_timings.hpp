// Every rank's instruction timings of one step, gathered on every rank over a group of all ranks
// (one all-gather of floats: microseconds from the rank's step start, and the step start itself
// on the aligned clock), for the run record and trace. Start times come back from the earliest
// rank's start of the step, so ranks compare. Shared by train and replay.
// Not here: taking the timings (the players), aligning clocks (clock_alignment.hpp) or writing.
#pragma once
#include <vector>

#include "exec/comm/communicator.hpp"
#include "plan/run_record_format.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

// step_start_s: this rank's start of the step on the aligned clock (AlignedClock::seconds).
// earliest_start_s, when given, receives the earliest rank's, the step's start in a trace.
StepTimings gather_step_timings(Communicator& comm, int world_group, const Schedule& schedule,
                                const std::vector<InstructionTiming>& mine, double step_start_s = 0,
                                double* earliest_start_s = nullptr);

}  // namespace fabtrain
