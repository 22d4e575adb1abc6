// fabtrain-exec: train GPT-2 for real with a plan's schedule (CPU or CUDA, MPI or NCCL).
#include "run_main.hpp"

int main(int argc, char** argv) {
  CLI::App app{"fabtrain-exec: train GPT-2 with a plan, on CPUs or GPUs, one process per rank"};
  return fabtrain::run_main(app, argc, argv);
}
