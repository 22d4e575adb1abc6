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

// The matrix products' precision of --precision, refused by name where this GPU lacks the
// tensor cores for it (TF32 and bf16: Ampere, sm_80, and newer; fp16: Volta, sm_70, and newer).
MatmulPrecision matmul_precision(const std::string& precision, const DeviceInfo& info) {
  struct Choice {
    const char* name;
    MatmulPrecision matmul;
    int major;  // the oldest architecture with the tensor cores for it (0: any GPU)
    const char* since;
  };
  static const Choice choices[] = {{"fp32", MatmulPrecision::fp32, 0, ""},
                                   {"tf32", MatmulPrecision::tf32, 8, "Ampere, sm_80"},
                                   {"bf16", MatmulPrecision::bf16, 8, "Ampere, sm_80"},
                                   {"fp16", MatmulPrecision::fp16, 7, "Volta, sm_70"}};
  for (const Choice& c : choices) {
    if (precision != c.name) continue;
    if (info.major < c.major)
      fail("--precision {}: {} (sm_{}{}) has no {} tensor cores ({}, and newer do)", precision,
           info.name, info.major, info.minor, precision, c.since);
    return c.matmul;
  }
  fail("--precision {}: the CUDA backend computes in fp32, tf32, bf16 or fp16", precision);
}

// precision: fp32, tf32, bf16 or fp16 (matrix products; fp32 master weights, everything else
// fp32; fp16 with dynamic loss scaling). comm: "nccl", "mpi" or "auto". Fails by name on bad
// values or when there is no GPU.
Backend make_cuda_backend(const BackendSettings& settings) {
  const std::string& precision = settings.precision;
  const std::string& comm = settings.comm;
  if (comm != "auto" && comm != "nccl" && comm != "mpi")
    fail("--comm {}: must be nccl, mpi or auto", comm);
  const int device = select_device(settings.local_rank);
  const DeviceInfo info = device_info(device);
  const MatmulPrecision matmul = matmul_precision(precision, info);
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
  backend.make_ops = [matmul] { return make_cuda_ops({matmul}); };
  backend.loss_scaling = matmul == MatmulPrecision::fp16;
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
