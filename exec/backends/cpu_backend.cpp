// The CPU backend's registration (exec/backend.hpp): the kernels of exec/kernels.hpp on host
// memory, the schedule on MPI. It runs everywhere; --precision and --comm do not apply to it.
#include <fmt/format.h>

#include "exec/backend.hpp"
#include "exec/cpu_ops.hpp"
#include "exec/host_info.hpp"

namespace fabtrain {
namespace {

Backend make_cpu_backend(const BackendSettings& settings) {
  Backend backend;
  backend.name = "cpu";
  backend.banner = fmt::format("cpu, {} OpenMP threads per rank, {} ({})", settings.threads,
                               settings.host, cpu_model());
  backend.description = "cpu";
  backend.make_ops = [] { return make_cpu_ops(); };
  return backend;
}

const BackendRegistration registration{{"cpu", [] { return std::string(); }, make_cpu_backend}};

}  // namespace
}  // namespace fabtrain
