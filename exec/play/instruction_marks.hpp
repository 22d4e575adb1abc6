// Instruction times from a backend's own clock: a device backend records a mark (a CUDA event)
// on its queue before the first instruction of a step and after each one, without waiting, and
// reads the marks' times once the step is over. Instruction i ran from mark i to mark i+1 on the
// queue (what the host did in between, such as a blocking transfer, lies between the two marks
// as well, since each mark is recorded after the host returned). This turns those n+1 times into
// the run record's entries, the same InstructionTiming the host clock gives on the CPU.
// Not here: recording or reading the marks (Stage::mark, Stage::mark_seconds).
#pragma once
#include <span>
#include <vector>

#include "plan/run_record_format.hpp"

namespace fabtrain {

// marks: seconds of marks 0..n after mark 0 (marks[0] = 0), n = instructions. An Error names
// the mark when there are not n+1 of them, one is not finite, or one precedes its predecessor
// (marks on one queue complete in order).
std::vector<InstructionTiming> timings_from_marks(std::span<const double> marks,
                                                  std::size_t instructions);

}  // namespace fabtrain
