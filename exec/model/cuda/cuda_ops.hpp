// The CUDA backend of the GPT-2 operations (exec/model/gpt2_ops.hpp): device memory, the matrix
// products on cuBLAS (cuda_gemm.hpp) and the rest in the kernels of cuda_kernels.hpp, all queued
// on the backend's own stream; download() and synchronize() wait for it. The scratch the CUDA
// kernels need (column sums, LayerNorm, the attention's score gradient) is kept here.
// Not here: the stage (one Gpt2Stage for every backend), the communicators.
#pragma once
#include <memory>

#include "exec/model/gpt2_ops.hpp"

namespace fabtrain::cuda {

struct OpsOptions {
  bool tf32 = false;  // TF32 tensor-core matrix products (Ampere and newer); fp32 otherwise
};

// Uses the current CUDA device (cudaSetDevice before).
std::unique_ptr<Gpt2Ops> make_cuda_ops(OpsOptions options = {});

}  // namespace fabtrain::cuda
