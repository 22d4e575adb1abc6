// The learning rate of each step: linear warm-up from lr/warmup to lr over the first `warmup`
// steps, then cosine decay to min_fraction*lr at the last step (llm.c's schedule). Steps count
// from 0. Not here: the optimizer (AdamW in exec/model/gpt2_stage.hpp).
#pragma once

namespace fabtrain {

struct LrSchedule {
  float max_lr = 3e-4f;
  int warmup = 0;
  int total_steps = 1;
  float min_fraction = 0.1f;
  float at(int step) const;
};

}  // namespace fabtrain
