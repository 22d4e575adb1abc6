// CUDA_CHECK / CUBLAS_CHECK / NCCL_CHECK: run a CUDA runtime, cuBLAS or NCCL call and turn a
// failure into a fabtrain::Error naming the call, file:line, the library's own message and a
// hint. Kernel launches are checked with CUDA_CHECK(cudaGetLastError()). Not here: retries.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "common/error.hpp"

namespace fabtrain::detail {

[[noreturn]] inline void cuda_failed(cudaError_t code, const char* call, const char* file,
                                     int line) {
  const char* hint = "check the device with nvidia-smi";
  if (code == cudaErrorMemoryAllocation)
    hint =
        "the GPU is out of memory: lower --batch (microbatch) or --seq, or use a plan with "
        "recomputation, pipeline or tensor parallelism";
  else if (code == cudaErrorNoDevice || code == cudaErrorInsufficientDriver)
    hint = "no usable CUDA device or driver: run on a machine with a GPU, or use --device cpu";
  else if (code == cudaErrorNoKernelImageForDevice)
    hint = "this GPU's architecture is not in CMAKE_CUDA_ARCHITECTURES: rebuild with it";
  fail("{}:{}: {} failed: {} ({}) (hint: {})", file, line, call, cudaGetErrorString(code),
       cudaGetErrorName(code), hint);
}

[[noreturn]] inline void cublas_failed(cublasStatus_t code, const char* call, const char* file,
                                       int line) {
  fail(
      "{}:{}: {} failed: {} (hint: a matrix shape or leading dimension is wrong, or the GPU is "
      "out of memory)",
      file, line, call, cublasGetStatusString(code));
}

[[noreturn]] inline void nccl_failed(ncclResult_t code, const char* call, const char* file,
                                     int line) {
  fail(
      "{}:{}: {} failed: {} (hint: a peer rank may have died, the ranks' schedules disagree, or "
      "two ranks share one GPU; rerun with NCCL_DEBUG=INFO)",
      file, line, call, ncclGetErrorString(code));
}

}  // namespace fabtrain::detail

#define CUDA_CHECK(call)                                                            \
  do {                                                                              \
    const cudaError_t cuda_check_code_ = (call);                                    \
    if (cuda_check_code_ != cudaSuccess)                                            \
      ::fabtrain::detail::cuda_failed(cuda_check_code_, #call, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(call)                                                              \
  do {                                                                                  \
    const cublasStatus_t cublas_check_code_ = (call);                                   \
    if (cublas_check_code_ != CUBLAS_STATUS_SUCCESS)                                    \
      ::fabtrain::detail::cublas_failed(cublas_check_code_, #call, __FILE__, __LINE__); \
  } while (0)

#define NCCL_CHECK(call)                                                            \
  do {                                                                              \
    const ncclResult_t nccl_check_code_ = (call);                                   \
    if (nccl_check_code_ != ncclSuccess)                                            \
      ::fabtrain::detail::nccl_failed(nccl_check_code_, #call, __FILE__, __LINE__); \
  } while (0)
