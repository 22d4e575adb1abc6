// Times training steps of GPT-2 small on one CPU rank (the whole model in one Gpt2Stage, tp=1:
// forward, backward, AdamW) at B=4 with T=64 and T=256, measures this machine's sgemm FLOP/s on
// a GPT-2-sized product, and prints ms/step (median), tokens/s, MFU (model FLOPs / time /
// measured sgemm FLOP/s) and the ratio to llm.c's CPU trainer (4.4-4.75 s/step at B=4, T=64
// measured on the development machine), then one "ratio" line per target (measured / target).
// Like fabtrain-exec, it re-executes itself first with OpenBLAS's fast kernels and passive
// OpenMP waiting (exec/model/kernels_blas.hpp), so it times what training runs.
// Usage: bench_cpu_model [steps per size, default 5] [T, default both 64 and 256].
// Not here: communication, data loading (random tokens).
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "exec/model/gpt2_stage.hpp"
#include "exec/model/kernels_blas.hpp"
#include "models/costs.hpp"
#include "models/model_spec.hpp"

using namespace fabtrain;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// FLOP/s of sgemm on the MLP's first product at 1024 tokens: (1024 x 768) . (768 x 3072). The
// fastest of 15 runs: what the machine can do (a loaded machine lowers a median, which would
// flatter the MFU).
double measure_sgemm_flops() {
  const int m = 1024, k = 768, n = 3072;
  std::vector<float> a(std::size_t(m) * k, 0.01f), b(std::size_t(n) * k, 0.02f),
      c(std::size_t(m) * n);
  std::vector<double> times;
  for (int rep = 0; rep < 16; ++rep) {
    const auto start = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, b.data(), k,
                0.0f, c.data(), n);
    times.push_back(seconds_since(start));
  }
  times.erase(times.begin());  // warm-up
  return 2.0 * m * n * k / *std::min_element(times.begin(), times.end());
}

struct StepTiming {
  double seconds = 0;      // median over the timed steps
  double cpu_seconds = 0;  // process CPU time per step (all threads): shows a loaded machine
  float first_loss = 0, last_loss = 0;
};

StepTiming time_steps(const ModelSpec& m, int b, int t, int steps) {
  Gpt2Stage stage(m, BlockRange{0, block_count(m)}, 1, 0, b, t, 1);
  const auto full = init_full_parameters(m, 1337);
  stage.load_full(full);
  std::vector<unsigned char> decay(stage.params().size(), 0);
  for (const ParamRun& run : stage.param_runs())
    std::fill_n(decay.begin() + run.local_offset, run.count, run.decay ? 1 : 0);
  std::vector<float> adam_m(decay.size(), 0.0f), adam_v(decay.size(), 0.0f);
  std::vector<int> tokens(std::size_t(b) * (t + 1));
  std::uint64_t state = 42;
  for (int& token : tokens) {  // a fixed pseudo-random batch: xorshift, reproducible everywhere
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    token = int(state % std::uint64_t(m.vocab_size));
  }
  std::vector<int> x(tokens.begin(), tokens.begin() + b * t),
      y(tokens.begin() + 1, tokens.begin() + b * t + 1);
  const int blocks = block_count(m);
  AdamW adamw;
  StepTiming timing;
  std::vector<double> times;
  std::clock_t cpu_start = 0;
  for (int step = 0; step <= steps; ++step) {
    if (step == 1) cpu_start = std::clock();  // step 0 warms up (allocations, page faults)
    const auto start = Clock::now();
    stage.zero_grads();
    stage.set_tokens(0, x);
    stage.set_targets(0, y);
    for (int block = 0; block < blocks; ++block) stage.forward(block, 0);
    const float loss = stage.loss(0);
    for (int block = blocks - 1; block >= 0; --block) stage.backward(block, 0, false);
    stage.release(0);
    adamw.update(stage.params(), stage.grads(), adam_m, adam_v, decay, 1e-4f, step + 1);
    if (step > 0) times.push_back(seconds_since(start));
    if (step == 0) timing.first_loss = loss;
    timing.last_loss = loss;
  }
  timing.seconds = median(times);
  timing.cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC / steps;
  return timing;
}

}  // namespace

int main(int argc, char** argv) {
  reexec_with_fast_blas(argv);  // OpenBLAS's SSE3 fallback on unknown virtual CPUs is 5x slower
  const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const ModelSpec m = load_model("gpt2");
  const double sgemm = measure_sgemm_flops();
  fmt::print("sgemm (1024x768 . 768x3072): {:.1f} GFLOP/s, OpenBLAS kernels {}\n", sgemm / 1e9,
             blas_core_name());
  fmt::print("{} one rank, fp32, AdamW included, median of {} steps\n", m.name, steps);
  fmt::print("{:>3} {:>4} {:>10} {:>10} {:>9} {:>10} {:>6} {:>9} {:>9}  {}\n", "B", "T", "ms/step",
             "cpu-ms/step", "tokens/s", "GFLOP/s", "MFU", "loss 0", "loss N",
             "vs llm.c CPU (4.4-4.75 s/step)");
  std::vector<int> lengths = {64, 256};
  if (argc > 2) lengths = {std::max(1, std::min(m.n_ctx, std::atoi(argv[2])))};
  std::vector<std::string> summary;
  for (int t : lengths) {
    const int b = 4;
    const StepTiming timing = time_steps(m, b, t, steps);
    const double flops = training_flops_per_token(m, t) * b * t;
    const double achieved = flops / timing.seconds;
    std::string versus = "-";
    if (t == 64)
      versus = fmt::format("speed {:.2f}x-{:.2f}x of llm.c", 4.4 / timing.seconds,
                           4.75 / timing.seconds);
    fmt::print(
        "{:>3} {:>4} {:>10.1f} {:>10.1f} {:>9.0f} {:>10.1f} {:>5.0f}% {:>9.4f} {:>9.4f}  {}\n", b,
        t, timing.seconds * 1e3, timing.cpu_seconds * 1e3, b * t / timing.seconds, achieved / 1e9,
        100.0 * achieved / sgemm, timing.first_loss, timing.last_loss, versus);
    summary.push_back(
        fmt::format("B=4 T={}: MFU {:.0f}% of measured sgemm, target >= 40%: ratio {:.2f}", t,
                    100.0 * achieved / sgemm, achieved / sgemm / 0.40));
    if (t == 64)
      summary.push_back(
          fmt::format("B=4 T=64: {:.0f} ms/step vs llm.c CPU 4400-4750, target >= 2x faster: "
                      "ratio {:.2f}-{:.2f}",
                      timing.seconds * 1e3, 4.4 / timing.seconds / 2, 4.75 / timing.seconds / 2));
  }
  // Ratio lines (measured / target, >= 1 meets it) for bench/run.sh.
  for (const std::string& line : summary) fmt::print("{}\n", line);
  return 0;
}
