// See kernels_blas.hpp: detecting OpenBLAS's generic fallback and re-executing with the kernel
// family the CPU supports.
#include "exec/model/kernels_blas.hpp"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace fabtrain {

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string better_blas_core() {
  std::string core = blas_core_name();
  std::transform(core.begin(), core.end(), core.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  // OpenBLAS's families without AVX2: what its DYNAMIC_ARCH falls back to on unknown CPUs.
  static const std::set<std::string> slow = {"prescott",  "core2",  "penryn",      "dunnington",
                                             "nehalem",   "atom",   "katmai",      "coppermine",
                                             "northwood", "banias", "sandybridge", "unknown"};
  if (!slow.contains(core)) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

// A small product checked against a plain loop: some OpenBLAS builds compute wrong results with
// a forced kernel family on some processors, so a forced choice must prove itself.
static bool sgemm_is_correct() {
  constexpr int n = 67, k = 45, m = 39;
  std::vector<float> a(n * k), b(k * m), c(n * m), ref(n * m, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 13) / 13.0f - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 17) / 17.0f - 0.5f;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, m, k, 1.0f, a.data(), k, b.data(), m,
              0.0f, c.data(), m);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += double(a[i * k + p]) * b[p * m + j];
      if (std::abs(sum - c[i * m + j]) > 1e-4) return false;
    }
  return true;
}

void reexec_with_fast_blas(char** argv) {
  if (const char* state = std::getenv("FABTRAIN_BLAS_REEXEC")) {
    // Forced by us in the previous exec: keep a forced kernel family only if it computes
    // correctly, else go back to the library's own choice (once).
    if (std::string(state) == "1" && !sgemm_is_correct()) {
      unsetenv("OPENBLAS_CORETYPE");
      setenv("FABTRAIN_BLAS_REEXEC", "2", 1);
      execv("/proc/self/exe", argv);
    }
    return;
  }
  bool changed = false, forced_core = false;
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    changed = true;
  }
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    const std::string core = better_blas_core();
    if (!core.empty()) {
      setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
      changed = forced_core = true;
    }
  }
  if (!changed) return;
  // Never loop, whatever the libraries do with the environment.
  setenv("FABTRAIN_BLAS_REEXEC", forced_core ? "1" : "0", 1);
  execv("/proc/self/exe", argv);
  // exec failed: carry on with the slower settings rather than stop.
}

}  // namespace fabtrain
