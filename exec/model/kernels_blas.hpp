// Making sure OpenBLAS runs its fast kernels. Debian's OpenBLAS picks its kernels when it is
// loaded, from the CPU model; on virtual CPUs whose model it does not know (a plain "Intel Xeon
// Processor" with AVX-512) it falls back to its SSE3 "Prescott" kernels, 5x slower here. The
// choice can only be overridden by OPENBLAS_CORETYPE before the library loads, so a program
// sets it and re-executes itself.
// The same re-execution sets OMP_WAIT_POLICY=PASSIVE (when unset): Debian's OpenBLAS runs sgemm
// on its own pthreads, and libgomp's idle threads otherwise spin for a while after each
// parallel region, taking the cores away from them (GPT-2 small on 2 cores: 5.4 s/step
// spinning, 1.5 s passive). libgomp reads the variable only when it loads, hence the exec.
// Not here: thread counts (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS).
#pragma once
#include <string>

namespace fabtrain {

// The OpenBLAS kernel family in use ("SkylakeX", "Haswell", "Prescott", ...).
std::string blas_core_name();
// The kernel family this CPU supports that OpenBLAS should use, or "" when its choice is fine.
std::string better_blas_core();
// Call first thing in main(): when OMP_WAIT_POLICY is unset, or better_blas_core() names a
// family and OPENBLAS_CORETYPE is unset, sets them and re-executes /proc/self/exe with the same
// arguments (once; returns if exec fails). A user's own setting of either is kept.
void reexec_with_fast_blas(char** argv);

}  // namespace fabtrain
