// The default global batch, one definition for `fabtrain schedule`, `simulate` and the selector:
// 8 sequences per GPU (Alpa's GPT-2 benchmark, the study's setting), rounded up to a multiple of
// dp*mb so that every replica's microbatches are whole and the batch is valid for any plan.
// When dp*mb divides 8 per GPU, as for every plan the selector enumerates, it is exactly that.
#pragma once
#include "plan/plan.hpp"

namespace fabtrain {

inline constexpr int kDefaultSequencesPerGpu = 8;

// Sequences per step for n GPUs before rounding: kDefaultSequencesPerGpu * n.
int default_batch_for_gpus(int gpus);
int default_global_batch(const Plan& plan);

}  // namespace fabtrain
