// fabtrain-exec: train GPT-2 for real with a plan's schedule (CPU or CUDA, MPI or NCCL).
#include "exec/model/kernels_blas.hpp"
#include "run_main.hpp"

int main(int argc, char** argv) {
  fabtrain::reexec_with_fast_blas(argv);  // before any BLAS call: see exec/model/kernels_blas.hpp
  CLI::App app{"fabtrain-exec: train GPT-2 with a plan, on CPUs or GPUs, one process per rank"};
  return fabtrain::run_main(app, argc, argv);
}
