// The CUDA backend's factory for the trainer (see cuda_backend.hpp).
#include "exec/cuda/cuda_backend.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "exec/cuda/cuda_gpt2_stage.hpp"
#include "exec/cuda/nccl_communicator.hpp"

namespace fabtrain::cuda {

DeviceBackend make_cuda_backend(MpiCommunicator& mpi, const std::string& precision,
                                const std::string& comm) {
  if (precision != "fp32" && precision != "tf32")
    fail("--precision {}: the CUDA backend computes in fp32 or tf32 (bf16 and fp16 with fp32 "
         "master weights are not implemented yet)",
         precision);
  if (comm != "auto" && comm != "nccl" && comm != "mpi")
    fail("--comm {}: must be nccl, mpi or auto", comm);
  const int device = select_device(mpi.local_rank());
  const DeviceInfo info = device_info(device);
  if (precision == "tf32" && info.major < 8)
    fail("--precision tf32: {} (sm_{}{}) has no TF32 tensor cores (Ampere, sm_80, and newer do)",
         info.name, info.major, info.minor);
  const bool shared_gpu = mpi.local_size() > device_count();
  if (comm == "nccl" && shared_gpu)
    fail("--comm nccl: {} ranks on {} share {} GPUs, and NCCL needs one GPU per rank (use --comm mpi)",
         mpi.local_size(), mpi.host(), device_count());
  const bool use_nccl = comm == "nccl" || (comm == "auto" && !shared_gpu);
  DeviceBackend backend;
  backend.name = "cuda";
  backend.description = fmt::format("cuda {} on GPU {}: {}, {} communicator", precision, device,
                                    describe(info), use_nccl ? "NCCL" : "MPI");
  const StageOptions options{precision == "tf32"};
  backend.make_stage = [options](const ModelSpec& m, BlockRange blocks, int tp, int tp_rank, int b,
                                 int t, int slots) -> std::unique_ptr<Stage> {
    return std::make_unique<CudaGpt2Stage>(m, blocks, tp, tp_rank, b, t, slots, options);
  };
  if (use_nccl)
    backend.make_communicator = [](MpiCommunicator& m) -> std::unique_ptr<Communicator> {
      return std::make_unique<NcclCommunicator>(m);
    };
  return backend;
}

}  // namespace fabtrain::cuda
