// The CUDA backend's registration (exec/backends/backend.hpp): picks this rank's GPU from its
// node-local rank, gives the CUDA operations (exec/model/cuda/cuda_ops.hpp) and chooses the
// communicator: NCCL when every rank on a host has its own GPU, MPI (through the stage's host
// copies) when ranks share one, none for a single rank. Built only with FABTRAIN_HAVE_CUDA.
#include <fmt/format.h>

#include "common/error.hpp"
#include "common/human_units.hpp"
#include "exec/backends/backend.hpp"
#include "exec/comm/nccl/nccl_communicator.hpp"
#include "exec/cuda/cuda_check.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "exec/model/cuda/cuda_ops.hpp"

namespace fabtrain::cuda {
namespace {

// precision: "fp32" or "tf32" (TF32 tensor-core matrix products, Ampere and newer).
// comm: "nccl", "mpi" or "auto". Fails by name on bad values or when there is no GPU.
Backend make_cuda_backend(const BackendSettings& settings) {
  const std::string& precision = settings.precision;
  const std::string& comm = settings.comm;
  if (precision != "fp32" && precision != "tf32")
    fail(
        "--precision {}: the CUDA backend computes in fp32 or tf32 (bf16 and fp16 with fp32 "
        "master weights are not implemented yet)",
        precision);
  if (comm != "auto" && comm != "nccl" && comm != "mpi")
    fail("--comm {}: must be nccl, mpi or auto", comm);
  const int device = select_device(settings.local_rank);
  const DeviceInfo info = device_info(device);
  if (precision == "tf32" && info.major < 8)
    fail("--precision tf32: {} (sm_{}{}) has no TF32 tensor cores (Ampere, sm_80, and newer do)",
         info.name, info.major, info.minor);
  const bool shared_gpu = settings.local_size > device_count();
  if (comm == "nccl" && shared_gpu)
    fail("--comm nccl: {} on {} share {}, and NCCL needs one GPU per rank (use --comm mpi)",
         counted(settings.local_size, "rank"), settings.host, counted(device_count(), "GPU"));
  const bool use_nccl = comm == "nccl" || (comm == "auto" && !shared_gpu);
  Backend backend;
  backend.name = "cuda";
  backend.description = fmt::format("cuda {} on GPU {}: {}, {} communicator", precision, device,
                                    describe(info), use_nccl ? "NCCL" : "MPI");
  backend.banner = fmt::format("{}, {}", backend.description, settings.host);
  const OpsOptions options{precision == "tf32"};
  backend.make_ops = [options] { return make_cuda_ops(options); };
  backend.device_memory = [] {
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return std::pair{double(free_bytes), double(total_bytes)};
  };
  if (use_nccl)
    // One rank under auto: nothing to communicate, so no NCCL setup (--comm nccl makes one).
    backend.make_communicator =
        [auto_comm = comm == "auto"](MpiCommunicator& m) -> std::unique_ptr<Communicator> {
      if (auto_comm && m.size() == 1) return nullptr;
      return std::make_unique<NcclCommunicator>(m);
    };
  return backend;
}

std::string unavailable() { return device_problem(); }

const BackendRegistration registration{{"cuda", unavailable, make_cuda_backend}};

}  // namespace
}  // namespace fabtrain::cuda
