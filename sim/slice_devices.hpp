// Where each rank of a schedule runs: its slice GPU, GPU type, VM and site (via device_of), with
// the checks that the plan fits the slice. Shared by the memory estimate and the simulator.
#pragma once
#include <string>
#include <vector>

#include "plan/schedule.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {

struct RankDevice {
  int gpu = 0;  // slice GPU index
  int vm = 0;   // index into Slice::vms
  const GpuType* type = nullptr;
  std::string site;
};

// Throws fabtrain::Error when the plan needs more GPUs than the slice has, maps two ranks to one
// GPU, or the slice has no catalog.
std::vector<RankDevice> slice_devices(const Slice& slice, const Schedule& schedule);

}  // namespace fabtrain
