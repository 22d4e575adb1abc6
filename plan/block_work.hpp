// The Forward and Backward instructions of a block range on one rank: the costs of
// models/costs.hpp summed over the blocks (recomputation counted in backward). Used by the plan
// compiler, which decides where they go. Not here: their order (compile.cpp).
#pragma once
#include "plan/schedule.hpp"

namespace fabtrain {

// b sequences of s tokens per microbatch; blocks [begin, end).
Forward forward_of(const ModelSpec& model, const Plan& plan, int b, int s, int mb, int begin,
                   int end);
Backward backward_of(const ModelSpec& model, const Plan& plan, int b, int s, int mb, int begin,
                     int end);

}  // namespace fabtrain
