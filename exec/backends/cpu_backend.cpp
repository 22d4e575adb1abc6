// The CPU backend's registration (exec/backends/backend.hpp): the kernels of exec/model/kernels.hpp
// on host memory, the schedule on MPI. It runs everywhere; --precision and --comm do not apply to
// it.
#include <fmt/format.h>

#include "common/host_info.hpp"
#include "exec/backends/backend.hpp"
#include "exec/model/cpu_ops.hpp"

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
