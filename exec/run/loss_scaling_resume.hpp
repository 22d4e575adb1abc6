// The loss scaler's part of resuming from a checkpoint: a run that scales its loss (fp16
// products) continues from the saved scale and count of good steps in a row, so it scales, skips
// and grows exactly as the uninterrupted run would. A state file that holds no scaler's state
// for such a run (versions 2 and 3 hold none), or one for a run that scales nothing, is
// refused by name. Not here: the state file (rank_state.hpp), the scaler
// (exec/play/loss_scale.hpp).
#pragma once
#include <string>

#include "exec/play/interpreter.hpp"
#include "exec/run/rank_state.hpp"

namespace fabtrain {

// `path`: the state file, for the messages.
void resume_loss_scaling(Interpreter& interpreter, const RankState& state, const std::string& path);

}  // namespace fabtrain
