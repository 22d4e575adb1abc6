// Hand-built catalogs, slices and schedules for the simulator tests: every number is chosen so
// the closed forms are easy to write down (no built-in data file is needed).
#pragma once
#include <string>
#include <vector>

#include "plan/schedule.hpp"
#include "platforms/slice.hpp"
#include "sim/simulator.hpp"

namespace fabtrain::test {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// GPU_TEST: 10 TFLOP/s fp32 (x0.5 matmul efficiency = 5e12 effective), 500 GB/s, 24 GiB,
// PCIe 12 GB/s; GPU_FAST: twice the peaks and bandwidth. NIC_TEST 10 GB/s. No kernel overhead.
// Link classes without latency or window unless a test sets them.
inline Catalog test_catalog() {
  Catalog c;
  GpuType g;
  g.name = "GPU_TEST";
  g.memory_bytes = 24 * GiB;
  g.peak_fp32_flops = 10e12;
  g.peak_fp16_flops = 80e12;
  g.memory_bandwidth = 500e9;
  g.pcie_bandwidth = 12e9;
  g.nvlink_bandwidth = 100e9;
  c.gpus[g.name] = g;
  GpuType f = g;
  f.name = "GPU_FAST";
  f.peak_fp32_flops = 20e12;
  f.peak_fp16_flops = 160e12;
  f.memory_bandwidth = 1000e9;
  c.gpus[f.name] = f;
  c.nics["NIC_TEST"] = {"NIC_TEST", 10e9, "test"};
  c.sites["A"] = {"A", "a", 0, 0};
  c.sites["B"] = {"B", "b", 0, 50};
  for (const char* name : {"pcie", "nvlink", "l2bridge", "l2sts", "switched"})
    c.link_classes[name] = LinkClass{name, 0, 0, 1, "test"};
  c.compute.matmul_efficiency = 0.5;
  c.compute.memory_efficiency = 1.0;
  c.compute.kernel_overhead_s = 0;
  FrameworkMemory framework;  // 1 GiB of context, nothing else
  framework.name = "test";
  framework.context_bytes = 1 * GiB;
  framework.source = "test";
  c.framework_memory[framework.name] = framework;
  c.default_framework_memory = framework.name;
  return c;
}

// One test catalog for the whole process, for slices that must outlive a test case.
inline const Catalog& shared_test_catalog() {
  static const Catalog c = test_catalog();
  return c;
}

// VMs of gpus_per_vm GPUs each, vms_per_site[i] of them at site "A", "B": one l2bridge per site,
// one l2sts joining A and B (rtt_s, bandwidth) when both are used.
inline Slice test_slice(const Catalog& catalog, std::vector<int> vms_per_site, int gpus_per_vm,
                        double rtt_s = 0.02, double wan_bandwidth = 1e9,
                        const std::string& gpu = "GPU_TEST") {
  Slice s;
  s.name = "test-" + std::to_string(vms_per_site.size()) + "x" + std::to_string(vms_per_site[0]) +
           "x" + std::to_string(gpus_per_vm) + "-" + gpu;
  s.catalog = &catalog;
  Network wan{"wan", "l2sts", {}, {"A", "B"}, rtt_s, wan_bandwidth, -1};
  for (size_t site = 0; site < vms_per_site.size(); ++site) {
    const std::string site_name = site == 0 ? "A" : "B";
    Network lan{"lan" + site_name, "l2bridge", {}, {}, -1, 0, -1};
    for (int v = 0; v < vms_per_site[site]; ++v) {
      Vm vm{"vm" + site_name + std::to_string(v), site_name, gpu, gpus_per_vm, "NIC_TEST", "pcie"};
      lan.vms.push_back(vm.name);
      wan.vms.push_back(vm.name);
      s.vms.push_back(vm);
    }
    s.networks.push_back(lan);
  }
  if (vms_per_site.size() > 1) s.networks.push_back(wan);
  return s;
}

// An empty schedule of n ranks for a plan of dp=n (streams filled by the test).
inline Schedule empty_schedule(int world, std::vector<int> devices = {}) {
  Schedule s;
  s.world = world;
  s.plan.dp = world;
  s.plan.devices = devices;
  s.global_batch = world;
  s.microbatch = 1;
  s.seq = 1024;
  s.ranks.resize(world);
  s.static_bytes.assign(world, 0);
  return s;
}

// A pipeline of p ranks (one per stage), m microbatches, every forward taking fwd_flops and
// every backward twice that, boundary tensors of `bytes`; GPipe or 1F1B order.
inline Schedule pipeline_schedule(int p, int m, bool one_f_one_b, double fwd_flops, double bytes,
                                  double activation = 1e6) {
  Schedule s = empty_schedule(p);
  s.plan.dp = 1;
  s.plan.pp = p;
  s.plan.mb = m;
  s.plan.schedule = one_f_one_b ? PipelineSchedule::one_f_one_b : PipelineSchedule::gpipe;
  s.global_batch = m;
  for (int r = 0; r < p; ++r) {
    auto& st = s.ranks[r];
    auto fwd = [&](int mb) {
      if (r > 0) st.push_back(Recv{Tensor::activation, mb, r - 1, bytes});
      st.push_back(Forward{mb, r, r + 1, fwd_flops, 0, activation, 1});
      if (r < p - 1) st.push_back(Send{Tensor::activation, mb, r + 1, bytes});
    };
    auto bwd = [&](int mb) {
      if (r < p - 1) st.push_back(Recv{Tensor::gradient, mb, r + 1, bytes});
      st.push_back(Backward{mb, r, r + 1, 2 * fwd_flops, 0, activation, false, 1});
      if (r > 0) st.push_back(Send{Tensor::gradient, mb, r - 1, bytes});
    };
    if (!one_f_one_b) {
      for (int mb = 0; mb < m; ++mb) fwd(mb);
      for (int mb = 0; mb < m; ++mb) bwd(mb);
    } else {
      const int warmup = std::min(p - r - 1, m);
      for (int mb = 0; mb < warmup; ++mb) fwd(mb);
      for (int i = 0; i < m - warmup; ++i) {
        fwd(warmup + i);
        bwd(i);
      }
      for (int mb = m - warmup; mb < m; ++mb) bwd(mb);
    }
  }
  return s;
}

// SimGrid 3.32 accepts new platform zones only before the first simulation of a process, so
// every test first builds every slice shape the tests use (once per process; under ctest each
// test is a process of its own anyway).
inline void build_test_platforms() {
  static bool built = [] {
    static const Catalog c = test_catalog();
    for (const auto& s : {test_slice(c, {1, 1}, 2), test_slice(c, {1, 1}, 1),
                          test_slice(c, {1, 1}, 2, 0.01, 1e9, "GPU_FAST"), test_slice(c, {2}, 4),
                          test_slice(c, {1}, 2), test_slice(c, {2}, 1), test_slice(c, {4}, 1),
                          test_slice(c, {8}, 1)})
      Simulator{s};
    return true;
  }();
  (void)built;
}

// A two-layer model small enough that compute stays out of the way of what a test measures.
inline const ModelSpec& tiny_model() {
  static ModelSpec m{"tiny", 2, 64, 2, 1024, 1000};
  return m;
}

}  // namespace fabtrain::test
