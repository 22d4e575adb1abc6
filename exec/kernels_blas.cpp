// See kernels_blas.hpp: detecting OpenBLAS's generic fallback and re-executing with the kernel
// family the CPU supports.
#include "exec/kernels_blas.hpp"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

namespace fabtrain {

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string better_blas_core() {
  std::string core = blas_core_name();
  std::transform(core.begin(), core.end(), core.begin(), [](unsigned char c) { return std::tolower(c); });
  // OpenBLAS's families without AVX2: what its DYNAMIC_ARCH falls back to on unknown CPUs.
  static const std::set<std::string> slow = {"prescott", "core2",   "penryn", "dunnington",
                                             "nehalem",  "atom",    "katmai", "coppermine",
                                             "northwood", "banias", "sandybridge", "unknown"};
  if (!slow.contains(core)) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

void reexec_with_fast_blas(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("FABTRAIN_BLAS_REEXEC")) return;
  const std::string core = better_blas_core();
  if (core.empty()) return;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  setenv("FABTRAIN_BLAS_REEXEC", "1", 1);  // never loop, whatever the library does with it
  execv("/proc/self/exe", argv);
  // exec failed: carry on with the slow kernels rather than stop.
}

}  // namespace fabtrain
