// fabtrain: plan, simulate and recommend GPT-2 pretraining on a slice of GPUs, without GPUs.
#include "run_main.hpp"

int main(int argc, char** argv) {
  CLI::App app{"fabtrain: predict and choose how to pretrain GPT-2 on a slice of GPUs"};
  return fabtrain::run_main(app, argc, argv);
}
