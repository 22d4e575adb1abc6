#include "exec/play/instruction_marks.hpp"

#include <cmath>

#include "common/error.hpp"

namespace fabtrain {

std::vector<InstructionTiming> timings_from_marks(std::span<const double> marks,
                                                  std::size_t instructions) {
  if (marks.size() != instructions + 1)
    fail("instruction marks: {} marks for {} instructions (one before each, one after the last)",
         marks.size(), instructions);
  for (std::size_t i = 0; i < marks.size(); ++i) {
    if (!std::isfinite(marks[i])) fail("instruction marks: mark {} is {}", i, marks[i]);
    if (i > 0 && marks[i] < marks[i - 1])
      fail("instruction marks: mark {} ({} s) precedes mark {} ({} s) on the same queue", i,
           marks[i], i - 1, marks[i - 1]);
  }
  std::vector<InstructionTiming> timings(instructions);
  for (std::size_t i = 0; i < instructions; ++i)
    timings[i] = {marks[i] - marks[0], marks[i + 1] - marks[i]};
  return timings;
}

}  // namespace fabtrain
