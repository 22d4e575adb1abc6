// Simulator speed: plan simulations per second in a long-lived process (GPT-2 medium, 2 sites,
// 4 GPUs; target >= 1000 per core) and one step of dp=16,tp=8,pp=8 on 1024 GPUs (target < 1 s):
// as 3D parallelism is deployed (nodes of 8 on NVLink, tp inside a node), and the harder case of
// tp groups spanning 3-GPU VMs; plus the process's peak memory. Prints measured values and ratios
// against the targets. Times are the process's CPU time (one core), medians of 3 for the steps.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <ctime>
#include <vector>

#include "common/data_dir.hpp"
#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "platforms/slice.hpp"
#include "sim/simulator.hpp"

using namespace fabtrain;

namespace {

// Two sites, `vms_per_site` VMs each of `gpus` GPUs, joined by an l2sts network (built in code so
// the benchmark does not depend on which slice files exist).
Slice bench_slice(const Catalog& catalog, int vms_per_site, int gpus, const std::string& gpu,
                  const std::string& interconnect = "pcie") {
  Slice s;
  s.name = fmt::format("bench-2x{}x{}-{}", vms_per_site, gpus, interconnect);
  s.catalog = &catalog;
  Network wan{"wan", "l2sts", {}, {"UTAH", "MASS"}, 0.03, 0, -1};
  for (const std::string site : {"UTAH", "MASS"}) {
    Network lan{"lan-" + site, "l2bridge", {}, {}, -1, 0, -1};
    for (int v = 0; v < vms_per_site; ++v) {
      Vm vm{fmt::format("{}-vm{}", site, v), site, gpu, gpus, "NIC_ConnectX_6", interconnect};
      lan.vms.push_back(vm.name);
      wan.vms.push_back(vm.name);
      s.vms.push_back(vm);
    }
    s.networks.push_back(lan);
  }
  s.networks.push_back(wan);
  return s;
}

// CPU seconds of this process: "per core" and robust to other work on the machine.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  // Optional argument: "small" or "large" runs only that part (for profiling).
  const std::string only = argc > 1 ? argv[1] : "";
  const Catalog& catalog = builtin_catalog();
  const ModelSpec medium = load_model("gpt2-medium");
  Simulator small(bench_slice(catalog, 1, 2, "GPU_RTX6000"));
  Simulator large(bench_slice(catalog, 171, 3, "GPU_A30"));  // 1026 GPUs: tp groups span VMs
  // 1024 GPUs as 3D parallelism is usually deployed: 8 GPUs per node on NVLink, tp inside a node.
  Simulator nodes(bench_slice(catalog, 64, 8, "GPU_A100_80GB", "nvlink"));
  // What the selector simulates by the hundred: gpt2-large with a tp=2 group per stage.
  Simulator six(load_slice(source_dir() + "/bench/slices/utah-amst-6.yaml", catalog));
  const ModelSpec large_model = load_model("gpt2-large");

  const Schedule s4 = compile(medium, parse_plan("dp=2,pp=2,mb=8"), 32, 1024);
  double per_s = 0;
  if (only != "large") {
    small.run(medium, s4);  // warm up
    int runs = 0;
    const double t = cpu_seconds();
    while (cpu_seconds() - t < 3) {
      small.run(medium, s4);
      ++runs;
    }
    per_s = runs / (cpu_seconds() - t);
  }

  const Schedule s1024 = compile(medium, parse_plan("dp=16,tp=8,pp=8,mb=8"), 16 * 8 * 8, 1024);
  const Schedule tp2 = compile(large_model, parse_plan("tp=2,pp=3,mb=8"), 48, 1024);
  double tp2_s = 0;
  if (only != "large" && only != "small") {
    six.run(large_model, tp2);  // warm up
    int runs = 0;
    const double t = cpu_seconds();
    while (cpu_seconds() - t < 2) {
      six.run(large_model, tp2);
      ++runs;
    }
    tp2_s = (cpu_seconds() - t) / runs;
  }

  // The median of three steps each: this machine is shared and noisy.
  auto median_step_s = [&](Simulator& sim, SimResult& result) {
    std::vector<double> times;
    for (int i = 0; i < 3; ++i) {
      const double t = cpu_seconds();
      result = sim.run(medium, s1024);
      times.push_back(cpu_seconds() - t);
    }
    std::sort(times.begin(), times.end());
    return times[1];
  };
  SimResult r, r_nodes;
  double big_s = 0, nodes_s = 0;
  if (only != "small") {
    nodes_s = median_step_s(nodes, r_nodes);
    big_s = median_step_s(large, r);
  }

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print("{:<52} {:>12} {:>12} {:>8}\n", "benchmark", "measured", "target", "ratio");
  fmt::print("{:<52} {:>12.0f} {:>12} ratio {:.2f}\n",
             "gpt2-medium dp=2,pp=2,mb=8, 2 sites x 2 GPUs: sims/s/core", per_s, ">= 1000",
             per_s / 1000);
  fmt::print("{:<52} {:>12.4f}\n", "gpt2-large tp=2,pp=3,mb=8 on utah-amst-6: CPU s/sim", tp2_s);
  fmt::print("{:<52} {:>12.3f} {:>12} ratio {:.2f}\n",
             "dp=16,tp=8,pp=8, 1024 GPUs = 128 nodes x 8 A100 NVLink", nodes_s, "< 1",
             1.0 / nodes_s);
  fmt::print("{:<52} {:>12.3f} {:>12} ratio {:.2f}\n",
             "  harder: same on 342 VMs x 3 A30, tp spanning VMs", big_s, "< 1", 1.0 / big_s);
  fmt::print("{:<52} {:>12.1f}\n", "peak RSS (MiB)", usage.ru_maxrss / 1024.0);
  fmt::print("(1024-GPU steps simulated: {:.3f} s on A30 VMs, {:.3f} s on A100 nodes, {} ranks)\n",
             r.step_time_s, r_nodes.step_time_s, r.ranks.size());
}
