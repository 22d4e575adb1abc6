// The backends `train --device NAME` can run on, by name: each one registers itself (a static
// BackendRegistration in its own object file, exec/backends/), the CPU exactly like the CUDA, so
// the trainer has one path and no program names a backend. A backend gives the operations a
// Gpt2Stage runs on (exec/model/gpt2_ops.hpp) and, optionally, the communicator the schedule is
// played on. Not here: the operations or communicators themselves.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/comm/communicator.hpp"
#include "exec/model/gpt2_ops.hpp"

namespace fabtrain {

class MpiCommunicator;

// What a backend is made from: the command line's choices and this rank's place on its host.
struct BackendSettings {
  std::string precision = "fp32";  // cuda: fp32, tf32, bf16 or fp16
  std::string comm = "auto";       // cuda: nccl, mpi or auto
  int local_rank = 0, local_size = 1;
  std::string host;
  int threads = 1;  // OpenMP threads per rank (the CPU's banner)
};

struct Backend {
  std::string name;         // the --device value it serves
  std::string banner;       // the "device" line of train's banner
  std::string description;  // the run record's device
  // The operations of one stage (one Gpt2Ops per stage: it holds the stage's scratch).
  std::function<std::unique_ptr<Gpt2Ops>()> make_ops;
  // The communicator the schedule is played on; null, or returning nullptr, means the MPI one.
  // Called once on every rank at the same point (it may be collective).
  std::function<std::unique_ptr<Communicator>(MpiCommunicator&)> make_communicator;
  // Free and total bytes of the device memory the stage will live in (null: the host's, checked
  // against /proc/meminfo instead).
  std::function<std::pair<double, double>()> device_memory;
  // The gradients need dynamic loss scaling (fp16 products: small gradients would flush to zero);
  // the interpreter does it (exec/play/loss_scale.hpp).
  bool loss_scaling = false;
};

struct BackendEntry {
  std::string name;
  // Why this backend cannot run on this machine ("" when it can), e.g. no GPU.
  std::function<std::string()> unavailable;
  // Fails by name on bad settings.
  std::function<Backend(const BackendSettings&)> make;
};

// Registers a backend at static initialisation; a name registered twice is an error.
struct BackendRegistration {
  explicit BackendRegistration(BackendEntry entry);
};

// The registered names, sorted ("cpu" always among them in a program linking fabtrain_backends).
std::vector<std::string> backend_names();
// The entry of `name`; fails with "--device NAME: not built here (this build has: ...)".
const BackendEntry& find_backend(const std::string& name);

}  // namespace fabtrain
