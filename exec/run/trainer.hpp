// A training run from start to end on one rank: resolve the model, plan and data; build the
// stage, the interpreter and the communicator's groups; initialise or load the weights (and on
// --resume the optimizer state and data position); then per step play the schedule, report
// progress, validate, record and checkpoint. Rank 0 prints and writes the shared files.
// Not here: the command line (apps/fabtrain-exec/cmd_train.cpp), the step's contents
// (exec/play/interpreter.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "exec/comm/mpi_communicator.hpp"

namespace fabtrain {

struct TrainConfig {
  std::string model = "gpt2-nano";
  std::string plan = "dp=1";
  std::vector<std::string> data, val_data;  // files, comma lists or globs
  int batch = 8;                            // global sequences per step
  int seq = 64;                             // tokens per sequence
  int steps = 10;                           // total steps (a resumed run continues to this)
  float lr = 1e-3f;
  int warmup = 0;
  float lr_min_fraction = 0.1f;
  float weight_decay = 0.1f;
  float grad_clip = 1.0f;  // 0: no clipping
  std::uint64_t seed = 1337;
  std::string init_from;  // llm.c checkpoint to start from
  std::string checkpoint_dir;
  int checkpoint_every = 0;  // 0: only at the end (when a directory is given)
  int keep_checkpoints = 3;  // newest checkpoints kept; 0: all
  bool resume = false;
  int stop_after = 0;          // end this run after N steps (0: run to --steps)
  std::string record;          // JSON lines run record
  std::string trace;           // Chrome trace JSON
  int val_every = 0;           // 0: only at the end (when --val-data is given)
  int val_batches = 4;         // global batches per validation
  std::string device = "cpu";  // a registered backend (exec/backends/backend.hpp)
  std::string comm = "auto";   // cuda: nccl (one GPU per rank), mpi, or auto
  std::string mpi_progress;    // thread | test | none; empty: MpiCommunicator's default
  std::string precision;       // empty: the plan's (exec/run/precision_option.hpp)
  double timeout_s = 300;      // watchdog per instruction
  int threads = 0;             // OpenMP threads per rank; 0: cores / ranks per host
  int print_every = 10;        // plain progress lines when not on a terminal
};

struct TrainResult {
  std::vector<float> losses;  // per step run here
  float final_val_loss = -1;
};

// Runs on the backend registered as config.device (exec/backends/backend.hpp).
TrainResult train(const TrainConfig& config, MpiCommunicator& comm);

}  // namespace fabtrain
