// The CUDA backend of the GPT-2 operations (exec/model/gpt2_ops.hpp): device memory, the matrix
// products on cuBLAS (cuda_gemm.hpp) and the rest in the kernels of cuda_kernels.hpp, all queued
// on the backend's own stream; download() and synchronize() wait for it. The scratch the CUDA
// kernels need (column sums, LayerNorm, the attention's score gradient) is kept here.
// Not here: the stage (one Gpt2Stage for every backend), the communicators.
#pragma once
#include <memory>

#include "exec/model/cuda/cuda_gemm.hpp"
#include "exec/model/gpt2_ops.hpp"

namespace fabtrain::cuda {

struct OpsOptions {
  // The matrix products' precision: fp32; TF32 or bf16 tensor cores (Ampere and newer); fp16
  // tensor cores (Volta and newer; its gradients need loss scaling). Everything else is fp32.
  MatmulPrecision matmul = MatmulPrecision::fp32;
};

// Uses the current CUDA device (cudaSetDevice before).
std::unique_ptr<Gpt2Ops> make_cuda_ops(OpsOptions options = {});

}  // namespace fabtrain::cuda
