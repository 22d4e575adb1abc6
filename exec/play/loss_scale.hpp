// Dynamic loss scaling, for matrix products in fp16 (5 exponent bits: gradients below 2^-24 flush
// to zero, above 65504 overflow): the loss's gradient is multiplied by the scale before the
// backward pass, so small gradients stay representable, and the gradients are divided by it
// before the norm, clipping and AdamW (the interpreter folds 1/scale into its 1/(mb*dp)). A step
// whose gradients overflowed (a gradient norm that is not finite) is skipped and the scale
// halved; after growth_interval applied steps in a row it doubles. Powers of two only, so scaling
// and unscaling are exact in fp32. Every rank decides from the same all-reduced norm, so all
// skip together. The defaults are PyTorch's torch.amp.GradScaler's (init_scale 2^16,
// growth_factor 2, backoff_factor 0.5, growth_interval 2000).
// Not here: the 16-bit products (exec/model/cuda/cuda_gemm.hpp), applying the scale (the stage).
#pragma once

namespace fabtrain {

struct LossScaling {
  float initial = 65536.0f;    // 2^16
  int growth_interval = 2000;  // applied steps in a row before the scale doubles
  float smallest = 1.0f;       // an overflow at this scale is divergence, not a scale too big
};

// What a checkpoint keeps of a scaler, so that a resumed run scales as an uninterrupted one.
struct LossScalerState {
  float scale = 0;
  int good_in_a_row = 0;  // applied steps since the last change of scale
  int skipped = 0;
};

class LossScaler {
 public:
  // Fails by name unless initial and smallest are powers of two, smallest <= initial, and
  // growth_interval >= 1.
  explicit LossScaler(LossScaling settings = {});

  enum class Decision { apply, skip, diverged };
  float scale() const { return scale_; }
  // After a step's gradient norm: apply the step (finite norm), skip it (the scale halves), or
  // diverged (not finite at the smallest scale: the scale stays).
  Decision update(double grad_norm);
  int skipped() const { return skipped_; }  // steps skipped so far

  LossScalerState state() const { return {scale_, good_in_a_row_, skipped_}; }
  // Continues from a checkpoint's state; fails by name where these settings could not have
  // reached it (a scale that is not a power of two at least the smallest, a count of good steps
  // outside [0, growth_interval), a negative count of skipped steps).
  void restore(const LossScalerState& state);

 private:
  LossScaling settings_;
  float scale_;
  int good_in_a_row_ = 0;
  int skipped_ = 0;
};

}  // namespace fabtrain
