// The CUDA backend as the trainer sees it (exec/device_backend.hpp): picks this rank's GPU from
// its node-local rank, builds CudaGpt2Stage instances and chooses the communicator: NCCL when
// every rank on a host has its own GPU, MPI (through the stage's host mirrors) when ranks share
// one. Not here: the stage or the communicators themselves.
#pragma once
#include <string>

#include "exec/device_backend.hpp"

namespace fabtrain::cuda {

// precision: "fp32" or "tf32" (TF32 tensor-core matrix products, Ampere and newer).
// comm: "nccl", "mpi" or "auto". Fails by name on bad values or when there is no GPU.
DeviceBackend make_cuda_backend(MpiCommunicator& mpi, const std::string& precision,
                                const std::string& comm);

}  // namespace fabtrain::cuda
