#include "exec/run/host_memory.hpp"

#include <fstream>
#include <sstream>
#include <string>

#include "common/error.hpp"
#include "models/costs.hpp"

namespace fabtrain {

StageMemory stage_memory(const ModelSpec& model, const BlockRange& blocks, int tp, int microbatch,
                         int seq, int mb, bool recompute) {
  double parameters = 0, activations = 0;
  for (int i = blocks.begin; i < blocks.end; ++i) {
    const Block block = block_at(model, i);
    parameters += double(block_parameters(model, block, tp));
    activations += activation_bytes(model, block, microbatch, seq, tp, Precision::fp32, recompute);
  }
  StageMemory memory;
  memory.state = 4.0 * 4 * parameters;  // weights, gradients, m, v
  memory.activations = double(mb) * activations;
  memory.full = 4.0 * double(model.parameters());
  return memory;
}

double host_need_bytes(const StageMemory& memory, bool backend_uses_host_memory) {
  return memory.state + memory.full + (backend_uses_host_memory ? memory.activations : 0.0);
}

double device_need_bytes(const StageMemory& memory) { return memory.state + memory.activations; }

void check_fits_device(double need, double free_bytes, double total_bytes) {
  if (need > free_bytes)
    fail(
        "the stage needs about {:.2f} GiB of device memory (model state and activations) but the "
        "device has {:.2f} of {:.2f} GiB free; use a smaller microbatch or --seq, recomputation, "
        "or more pipeline or tensor-parallel ranks",
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

void check_fits_host(double bytes, int ranks_on_host) {
  const auto available = host_available_bytes();
  if (!available) return;
  const double need = bytes * ranks_on_host;
  if (need > *available)
    fail(
        "the model needs about {:.2f} GiB per rank ({} ranks on this host: {:.2f} GiB) but the "
        "host has {:.2f} GiB available; use a smaller model, batch or sequence, or more hosts",
        bytes / (1 << 30), ranks_on_host, need / (1 << 30), *available / (1 << 30));
}

}  // namespace fabtrain
