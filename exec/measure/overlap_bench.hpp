// How much of a large all-reduce each MPI progress mode (exec/comm/mpi_communicator.hpp) hides
// behind compute, the measurement behind the default mode (docs/results/2026-12-01-overlap.md): per
// repeat, every rank starts an all-reduce of `mib` MiB, computes `blocks` blocks of a fixed amount
// of work (a memory-bound vector kernel sized so one block takes about block_ms alone), calling
// progress() between blocks as the interpreter does, then waits. Per mode it reports medians over
// repeats of: the wait (exposed communication), the compute (to see a progress thread slowing it),
// and the whole; plus the blocking all-reduce alone and the compute alone, as references. Not here:
// the command line (apps/fabtrain-exec/cmd_overlap_bench.cpp).
#pragma once
#include <string>
#include <vector>

#include "exec/comm/mpi_communicator.hpp"

namespace fabtrain {

struct OverlapBenchConfig {
  double mib = 64;
  int blocks = 12;
  double block_ms = 20;
  int repeats = 7;
  std::vector<std::string> modes = {"none", "test", "thread"};
  std::vector<int> poll_us = {50, 500, 2000};  // the thread mode once per pause
};

struct OverlapBenchRow {
  std::string mode;
  double exposed_s = 0, compute_s = 0, total_s = 0;  // medians over repeats, slowest rank
};

struct OverlapBenchResult {
  double comm_alone_s = 0, compute_alone_s = 0;  // medians, slowest rank
  std::vector<OverlapBenchRow> rows;
};

// Collective over the communicator's world (every rank calls it); leaves the progress mode as
// it found it.
OverlapBenchResult run_overlap_bench(const OverlapBenchConfig& config, MpiCommunicator& comm);
std::string overlap_bench_table(const OverlapBenchConfig& config, const OverlapBenchResult& r);

}  // namespace fabtrain
