// The ranks a rank's instruction stream sends to or receives from (its Send and Recv peers, in
// first-use order): what a communicator connects before the first step.
#pragma once
#include <vector>

#include "plan/schedule.hpp"

namespace fabtrain {

std::vector<int> transfer_peers(const std::vector<Instruction>& stream);

}  // namespace fabtrain
