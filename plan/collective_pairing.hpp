// Which operation each collective purpose is: a Collective carries both, the executor dispatches
// on the purpose and the simulator and the lower bound time the operation, so the two must never
// disagree. compile() derives the operation from the purpose; symbolic_run() refuses a schedule
// built any other way whose pair disagrees.
#pragma once
#include <optional>
#include <string>

#include "plan/schedule.hpp"

namespace fabtrain {

// tp sums, data-parallel gradients, the tied embedding and the gradient norm are all-reduces;
// ZeRO's gradients are reduce-scattered and its parameters all-gathered.
CollectiveOp op_for(Purpose purpose);
// Empty when c.op is op_for(c.purpose); else the mismatch in words.
std::optional<std::string> pairing_error(const Collective& c);

}  // namespace fabtrain
