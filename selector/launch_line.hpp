// The line that runs a searched plan for real: mpirun with the plan's ranks placed on the
// slice's VMs in the plan's device order (rank r on the VM of GPU devices[r]), by a hostfile or
// --host; the data-plane interface of the networks the ranks cross for Open MPI
// (btl_tcp_if_include, oob_tcp_if_include) and NCCL (NCCL_SOCKET_IFNAME), from the slice
// (platforms/data_plane.hpp); fabtrain-exec train with the model as the user gave it, the plan,
// batch and sequence, --device cuda on GPU slices, --precision for tf32, --comm mpi where the
// slice's communicator profile is Open MPI's (so the run uses the library the prediction
// assumed); or, when fabtrain-exec cannot run the plan, why not (plan/executor_support.hpp, the
// list the executor itself enforces).
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
  std::string comm;                   // what the ranks communicate with: "nccl" or "mpi"
  // Open MPI's hostfile for the placement: "VM slots=N" per VM in rank order, or one line per
  // rank under the sequential mapper; a VM's `address:` stands for its name where given.
  std::string hostfile;
  std::string hostfile_path;       // what the command names; "" = the command uses --host
  std::vector<std::string> notes;  // what the interface selection and communicator assumed
};

// model_arg: the --model the user gave (a built-in name or a config.json path, kept as given).
// seq: the resolved sequence length. hostfile_path: where the caller writes `hostfile` for the
// command to name ("" = place ranks with --host instead).
LaunchLine launch_line(const std::string& model_arg, const Slice& slice, const Evaluated& e,
                       int seq, const std::string& hostfile_path = "");

// True for a communicator profile that stands for Open MPI (openmpi-tcp, or a catalog's own
// profile named openmpi-* or mpi-*); every other profile stands for NCCL.
bool is_mpi_profile(const CommunicatorProfile& profile);

}  // namespace fabtrain
