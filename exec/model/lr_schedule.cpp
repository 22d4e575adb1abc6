// Warm-up then cosine learning rate (see lr_schedule.hpp).
#include "exec/model/lr_schedule.hpp"

#include <cmath>

namespace fabtrain {

float LrSchedule::at(int step) const {
  if (step < warmup) return max_lr * float(step + 1) / float(warmup);
  const float min_lr = max_lr * min_fraction;
  const int decay_steps = total_steps - warmup;
  if (decay_steps <= 1) return max_lr;
  const double ratio = std::min(1.0, double(step - warmup) / double(decay_steps - 1));
  const double coeff = 0.5 * (1.0 + std::cos(3.14159265358979323846 * ratio));
  return float(min_lr + coeff * (max_lr - min_lr));
}

}  // namespace fabtrain
