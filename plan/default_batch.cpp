// The default global batch (see default_batch.hpp).
#include "plan/default_batch.hpp"

namespace fabtrain {

int default_batch_for_gpus(int gpus) { return kDefaultSequencesPerGpu * gpus; }

int default_global_batch(const Plan& plan) {
  const int per_step = default_batch_for_gpus(plan.ranks()), unit = plan.dp * plan.mb;
  return (per_step + unit - 1) / unit * unit;
}

}  // namespace fabtrain
