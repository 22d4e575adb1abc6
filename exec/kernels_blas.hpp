// Making sure OpenBLAS runs its fast kernels. Debian's OpenBLAS picks its kernels when it is
// loaded, from the CPU model; on virtual CPUs whose model it does not know (a plain "Intel Xeon
// Processor" with AVX-512) it falls back to its SSE3 "Prescott" kernels, 5x slower here. The
// choice can only be overridden by OPENBLAS_CORETYPE before the library loads, so a program
// sets it and re-executes itself. Not here: threading (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS).
#pragma once
#include <string>

namespace fabtrain {

// The OpenBLAS kernel family in use ("SkylakeX", "Haswell", "Prescott", ...).
std::string blas_core_name();
// The kernel family this CPU supports that OpenBLAS should use, or "" when its choice is fine.
std::string better_blas_core();
// Call first thing in main(): when better_blas_core() names one and OPENBLAS_CORETYPE is unset,
// sets it and re-executes /proc/self/exe with the same arguments (once; returns if exec fails).
void reexec_with_fast_blas(char** argv);

}  // namespace fabtrain
