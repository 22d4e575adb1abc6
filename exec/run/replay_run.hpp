// fabtrain-exec replay from start to end on one rank: resolve the model, plan, GPU type and
// calibration; compile the schedule; refuse, before any rank allocates, a replay whose buffers do
// not fit the host; then per step play the schedule (exec/play/replay.hpp), report, record and
// trace in train's formats (the record's header says "mode": "replay"). Not here: the command line
// (apps/fabtrain-exec/cmd_replay.cpp).
#pragma once
#include <string>

#include "exec/comm/mpi_communicator.hpp"

namespace fabtrain {

struct ReplayConfig {
  std::string model = "gpt2-nano";
  std::string plan = "dp=1";
  int batch = 8;  // global sequences per step
  int seq = 64;   // tokens per sequence
  int steps = 10;
  std::string record, trace;
  double timeout_s = 300;
  std::string device_type = "CPU_HOST";  // a catalog GPU type: whose compute times to sleep
  std::string calibration;               // a calibration file (fabtrain calibrate), or none
  int print_every = 10;
  std::string mpi_progress;  // thread | test | none; empty: MpiCommunicator's default
};

// Returns each step's wall seconds (every rank).
std::vector<double> replay(const ReplayConfig& config, MpiCommunicator& comm);

}  // namespace fabtrain
