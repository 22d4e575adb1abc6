// Framework profiles of published runs (calibrate/data/published_runs.yaml, framework_profiles:):
// what an eager framework launches beyond the cost model's fused kernel list
// (models/framework_costs.hpp), read strictly from the file, and added to a compiled schedule's
// compute instructions. Not here: the cost formulas (models/framework_costs.hpp); plans or slices
// that name a profile (only check-published's rows do).
#pragma once
#include <map>
#include <string>

#include "models/framework_costs.hpp"
#include "plan/schedule.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {

// One profile from its mapping; throws fabtrain::Error naming the field.
FrameworkProfile read_framework_profile(const std::string& name, const YamlFields& f);

// Adds the profile's extra kernels to every Forward and Backward of the schedule (bytes, kernels,
// and the dropout masks kept from forward for backward, unless the plan recomputes); to each
// rank's OptimizerStep the launches its optimizer loop makes per parameter tensor the rank holds
// (after the gradients are reduced), and with dp > 1 to its last Backward DDP's bucket copies.
void apply_framework(Schedule& schedule, const ModelSpec& model, const FrameworkProfile& profile);

}  // namespace fabtrain
