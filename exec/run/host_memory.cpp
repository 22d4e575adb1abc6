#include "exec/run/host_memory.hpp"

#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/error.hpp"
#include "common/human_units.hpp"
#include "exec/model/half_operands.hpp"
#include "models/costs.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

StageMemory stage_memory(const ModelSpec& model, const Plan& plan, int stage, int microbatch,
                         int seq) {
  const BlockRange blocks = stage_blocks(model, plan).at(stage);
  double activations = 0;
  for (int i = blocks.begin; i < blocks.end; ++i)
    activations +=
        activation_bytes(model, block_at(model, i), microbatch, seq,
                         split_of(plan, block_at(model, i)), Precision::fp32, plan.recompute);
  const double p = stage_parameters(model, plan, stage) * 4.0;  // bytes of one fp32 copy
  const bool sharded = plan.zero >= 1 && plan.dp > 1;
  double state = 2 * p + 2 * (sharded ? p / plan.dp : p);  // weights, gradients; m and v
  if (sharded) state += p + 3 * p / plan.dp + p * (1 + 1.0 / plan.dp);
  const bool holds_wte = stage == 0 || (plan.pp > 1 && stage == plan.pp - 1);
  StageMemory memory;
  memory.state = state + (holds_wte ? 4.0 * model.vocab_size * model.n_embd : 0);
  memory.activations = double(plan.mb) * activations;
  memory.full = 4.0 * double(model.parameters());
  if (element_bytes(plan.precision) == 2)
    memory.half_operands = stage_operand_spans(model, plan, stage, microbatch, seq).bytes();
  return memory;
}

double host_need_bytes(const StageMemory& memory, bool backend_uses_host_memory) {
  return memory.state + memory.full + (backend_uses_host_memory ? memory.activations : 0.0);
}

double stage_memory_bytes(const ModelSpec& model, const Plan& plan, int stage, int microbatch,
                          int seq) {
  return host_need_bytes(stage_memory(model, plan, stage, microbatch, seq), true);
}

double device_need_bytes(const StageMemory& memory) {
  return memory.state + memory.activations + memory.half_operands;
}

void check_fits_device(double need, double free_bytes, double total_bytes) {
  if (need > free_bytes)
    fail(
        "the stage needs about {:.2f} GiB of device memory (model state, activations and, under "
        "bf16 or fp16, 16-bit operands) but the device has {:.2f} of {:.2f} GiB free; use a "
        "smaller microbatch or --seq, recomputation, or more pipeline or tensor-parallel ranks",
        need / (1 << 30), free_bytes / (1 << 30), total_bytes / (1 << 30));
}

std::optional<double> host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::optional<double> peak_resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "VmHWM:") return kib * 1024;
  }
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0 && usage.ru_maxrss > 0)
    return double(usage.ru_maxrss) * 1024;  // KiB on Linux
  return std::nullopt;
}

void check_fits_host(double bytes, int ranks_on_host) {
  const auto available = host_available_bytes();
  if (!available) return;
  const double need = bytes * ranks_on_host;
  if (need > *available)
    fail(
        "the model needs about {:.2f} GiB per rank ({} on this host: {:.2f} GiB) but the host "
        "has {:.2f} GiB available; use a smaller model, batch or sequence, or more hosts",
        bytes / (1 << 30), counted(ranks_on_host, "rank"), need / (1 << 30),
        *available / (1 << 30));
}

}  // namespace fabtrain
