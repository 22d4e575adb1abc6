// The four technique families a plan belongs to, as the study names them: what the "why" lines
// compare the winner against, and what a search can keep exact one by one
// (SearchOptions::best_of_each_family).
#pragma once
#include <array>

#include "plan/plan.hpp"

namespace fabtrain {

enum class Family { data_parallel, zero, shard, pipeshard };
inline constexpr std::array<Family, 4> kFamilies{Family::data_parallel, Family::zero, Family::shard,
                                                 Family::pipeshard};
const char* to_string(Family family);  // "data parallel", "ZeRO", "shard", "pipeshard"
// pp > 1: pipeshard; else tp > 1: shard; else zero > 0: ZeRO; else data parallel (one GPU too).
Family family_of(const Plan& plan);

}  // namespace fabtrain
