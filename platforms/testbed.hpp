// What a GPU VM on the FABRIC testbed can be (platforms/data/fabric_testbed.yaml): its sites, the
// GPU and NIC components with the keys fablib's site availability names them by, the most GPUs of
// a type one VM holds, and what a GPU VM is assumed to ask of its site.
// Not here: what is free now (selector/availability.hpp), slices themselves (slice.hpp).
#pragma once
#include <string>
#include <vector>

namespace fabtrain {

struct TestbedGpu {
  std::string model;  // fablib component and catalog GPU type, e.g. GPU_RTX6000
  std::string key;    // availability key, e.g. rtx6000 (rtx6000_available, ...)
  int max_per_vm = 1;
};

struct TestbedNic {
  std::string model;  // NIC_ConnectX_6
  std::string key;    // nic_connectx_6
};

struct GpuVmNeeds {
  int cores = 0;
  double ram_gb = 0, disk_gb = 0;
};

struct Testbed {
  std::vector<std::string> sites;
  std::vector<TestbedGpu> gpus;
  std::vector<TestbedNic> nics;  // dedicated NICs first, the shared one last
  GpuVmNeeds gpu_vm;
  std::string source;
  std::string path;

  const TestbedGpu* gpu_by_key(const std::string& key) const;  // null when unknown
};

// The built-in FABRIC description, loaded once; its GPU and NIC models are checked against the
// built-in catalog.
const Testbed& fabric_testbed();

}  // namespace fabtrain
