// Synthetic inputs for the calibration tests: run records whose instruction durations come from
// a known roofline plus noise, bench files with known rates, and a CPU device type with round
// numbers. Fits must recover the known parameters from them.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "calibrate/inputs.hpp"
#include "platforms/catalog.hpp"

namespace fabtrain::test {

inline GpuType test_cpu() {
  GpuType g;
  g.name = "CPU_TEST";
  g.is_cpu = true;
  g.peak_fp32_flops = 100e9;
  g.memory_bandwidth = 20e9;
  g.memory_bytes = 8e9;
  return g;
}

struct TrueRoofline {
  double fwd_matmul_efficiency = 0.3, bwd_matmul_efficiency = 0.2;
  double optimizer_memory_efficiency = 0.4;
  double per_block_s = 2e-4;
  double noise = 0.02;  // relative, uniform in [-noise, noise]
};

// `steps` timed steps of `world` ranks; instruction sizes vary with the seed so flops and blocks
// are not collinear. Communication takes comm_s per rank and step.
inline calib::RunData synthetic_run(const std::string& name, unsigned seed, const GpuType& device,
                                    const TrueRoofline& truth, int steps = 4, int world = 2,
                                    double comm_s = 0.01) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  auto noisy = [&](double t) { return t * (1 + truth.noise * (2 * unit(rng) - 1)); };
  calib::RunData run;
  run.path = name;
  run.plan = "dp=2";
  run.model = "synthetic";
  run.world = world;
  for (int s = 0; s < steps; ++s) {
    calib::StepSample step;
    step.step = s;
    step.communication_s.assign(world, comm_s);
    step.other_s.assign(world, 0.0);
    std::vector<double> busy(world, comm_s);
    for (int r = 0; r < world; ++r) {
      for (int mb = 0; mb < 3; ++mb) {
        const int blocks = 1 + int(unit(rng) * 6);
        const double flops = (0.5 + 3 * unit(rng)) * 1e8 * blocks;
        const double bytes = flops / 50;  // compute-bound on this device
        const double f = noisy(flops / (device.peak_fp32_flops * truth.fwd_matmul_efficiency) +
                               truth.per_block_s * blocks);
        const double b = noisy(2 * flops / (device.peak_fp32_flops * truth.bwd_matmul_efficiency) +
                               truth.per_block_s * blocks);
        step.compute.push_back({"fwd", r, flops, bytes, blocks, f});
        step.compute.push_back({"bwd", r, 2 * flops, 2 * bytes, blocks, b});
        busy[r] += f + b;
      }
      const double opt_bytes = (1 + unit(rng)) * 64e6;
      const double o =
          noisy(opt_bytes / (device.memory_bandwidth * truth.optimizer_memory_efficiency));
      step.compute.push_back({"opt", r, opt_bytes / 4, opt_bytes, 1, o});
      busy[r] += o;
    }
    step.wall_s = *std::max_element(busy.begin(), busy.end());
    run.steps.push_back(step);
  }
  return run;
}

}  // namespace fabtrain::test
