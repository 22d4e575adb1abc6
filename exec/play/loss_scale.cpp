// Dynamic loss scaling (see loss_scale.hpp).
#include "exec/play/loss_scale.hpp"

#include <cmath>

#include "common/error.hpp"

namespace fabtrain {
namespace {

bool power_of_two(float x) {
  int exponent = 0;
  return x > 0 && std::isfinite(x) && std::frexp(x, &exponent) == 0.5f;
}

}  // namespace

LossScaler::LossScaler(LossScaling settings) : settings_(settings), scale_(settings.initial) {
  if (!power_of_two(settings.initial) || !power_of_two(settings.smallest))
    fail("loss scaling: the initial scale {} and the smallest {} must be powers of two",
         settings.initial, settings.smallest);
  if (settings.smallest > settings.initial)
    fail("loss scaling: the smallest scale {} exceeds the initial {}", settings.smallest,
         settings.initial);
  if (settings.growth_interval < 1)
    fail("loss scaling: growth interval {} must be at least 1", settings.growth_interval);
}

void LossScaler::restore(const LossScalerState& state) {
  if (!power_of_two(state.scale) || state.scale < settings_.smallest)
    fail("loss scaling: a saved scale of {} is not a power of two of at least {}", state.scale,
         settings_.smallest);
  if (state.good_in_a_row < 0 || state.good_in_a_row >= settings_.growth_interval)
    fail("loss scaling: {} saved good steps in a row, outside 0 to {}", state.good_in_a_row,
         settings_.growth_interval - 1);
  if (state.skipped < 0) fail("loss scaling: {} saved skipped steps", state.skipped);
  scale_ = state.scale;
  good_in_a_row_ = state.good_in_a_row;
  skipped_ = state.skipped;
}

LossScaler::Decision LossScaler::update(double grad_norm) {
  if (!std::isfinite(grad_norm)) {
    good_in_a_row_ = 0;
    if (scale_ <= settings_.smallest) return Decision::diverged;
    scale_ *= 0.5f;
    ++skipped_;
    return Decision::skip;
  }
  if (++good_in_a_row_ >= settings_.growth_interval) {
    good_in_a_row_ = 0;
    // The largest power of two in fp32 is 2^127: a scale there stops growing.
    if (scale_ < 0x1p126f) scale_ *= 2.0f;
  }
  return Decision::apply;
}

}  // namespace fabtrain
