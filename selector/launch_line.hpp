// The line that runs a searched plan for real: mpirun with the plan's ranks placed on the
// slice's VMs in the plan's device order (rank r on the VM of GPU devices[r]), fabtrain-exec
// train with the model as the user gave it, the plan, batch and sequence, --device cuda on GPU
// slices, --precision for tf32; or, when fabtrain-exec cannot run the plan, why not
// (plan/executor_support.hpp, the list the executor itself enforces).
#pragma once
#include <string>
#include <vector>

#include "platforms/slice.hpp"
#include "selector/search.hpp"

namespace fabtrain {

struct LaunchLine {
  std::string command;                // the mpirun line; data is the placeholder TRAIN_TOKENS.bin
  std::string device;                 // "cpu" or "cuda"
  std::vector<std::string> rank_vms;  // the VM of each rank, in rank order
  std::string simulate_only;          // empty when the command runs the plan as simulated
};

// model_arg: the --model the user gave (a built-in name or a config.json path, kept as given).
// seq: the resolved sequence length.
LaunchLine launch_line(const std::string& model_arg, const Slice& slice, const Evaluated& e,
                       int seq);

}  // namespace fabtrain
