// Training runs that others measured and published (calibrate/data/published_runs.yaml): for each,
// where it was published, the model, the plan, the hardware it ran on and what was measured, so the
// simulator can be checked against it (check_published.hpp). Loading goes on past a bad row:
// each bad row is reported by its index, id and field, and the good rows are kept.
// Not here: simulating a row (check_published.hpp), or fitting anything from them.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/framework_costs.hpp"
#include "models/model_spec.hpp"
#include "plan/plan.hpp"
#include "platforms/catalog.hpp"

namespace fabtrain {

// The machines of a run: nodes of gpus_per_node GPUs of one type, joined inside a node by
// NVLink or PCIe and between nodes by a network (one aggregate NIC per node).
struct PublishedHardware {
  std::string gpu;  // catalog GPU type
  int nodes = 1;
  int gpus_per_node = 1;
  std::string intra_node = "nvlink";  // nvlink | pcie | pcie-host (through host memory)
  std::string network;                // between nodes: infiniband | ethernet ("" for one node)
  std::string nic;                    // catalog NIC type of a node (nodes > 1)
  // Ethernet shaped by the run itself (tc netem on each node's egress): the delay added to every
  // packet one way, and the rate each node may send at; 0 = not shaped.
  double added_delay_ms = 0;
  double shaped_gbit_s = 0;
  int gpus() const { return nodes * gpus_per_node; }
};

// What a published peak memory counts (sim/memory.hpp maps each onto the model's terms):
// allocated (torch.cuda.max_memory_allocated, PyTorch's memory summary "Allocated memory"),
// reserved (the caching allocator's segments), or device_used (nvidia-smi's or cudaMemGetInfo's
// used memory: the context and every library's buffers too).
enum class MemoryKind { allocated, reserved, device_used };
MemoryKind parse_memory_kind(const std::string& text);  // refuses others, naming the known
const char* to_string(MemoryKind kind);

// What the source measured, converted to seconds per optimizer step. A row gives a step time, a
// peak memory, or whether the run ran out of memory, or several of them.
struct PublishedMeasurement {
  double step_time_s = 0;    // 0: the source gives none (a memory or out-of-memory row)
  std::string as_published;  // "1310000 tokens/s", "137 TFLOP/s per GPU (Megatron formula)"
  std::optional<double> peak_memory_bytes;  // per GPU, where published
  MemoryKind memory_kind = MemoryKind::device_used;
  // Where the source says so: the run ran out of GPU memory (true) or ran (false).
  std::optional<bool> oom;
  bool timed() const { return step_time_s > 0; }
};

struct PublishedRun {
  int row = 0;  // index in the file's runs list
  std::string id;
  std::string source;  // title and place (table, section, line)
  std::string url;
  ModelSpec model;
  int seq = 0;
  int global_batch = 0;   // sequences per optimizer step
  Plan plan;              // its attention key says whether the run fused attention
  std::string framework;  // Megatron-LM, llm.c, PyTorch DDP, ...
  // The framework profile the run's kernels follow (the file's framework_profiles:), where the
  // source says it ran one; none: the cost model's fused kernel list as it is.
  std::optional<FrameworkProfile> framework_profile;
  PublishedHardware hardware;
  std::string communicator;  // catalog profile the run's NCCL transport corresponds to
  // The catalog's framework memory profile of the run's framework ("": the catalog's default).
  std::string framework_memory;
  PublishedMeasurement measured;
  std::vector<std::string> unstated;  // what the source leaves out, and what this file assumed
  std::string large_error_reason;     // why a prediction may miss by more than 50%, if known
  // Rows of one source that ran several plans of the same job on the same hardware share this
  // name ("" for none): the check compares the plan predicted fastest with the one measured so.
  std::string compare;
};

struct PublishedFile {
  std::map<std::string, FrameworkProfile> framework_profiles;
  std::vector<PublishedRun> runs;     // the good rows
  std::vector<std::string> problems;  // one line per bad row: "runs[3] (id): field: what"
  int rows = 0;                       // rows in the file, good and bad
};

// Reads the file; throws only when the file itself cannot be read, has no runs list or has a bad
// framework profile (named by its field).
PublishedFile load_published_runs(const std::string& path,
                                  const Catalog& catalog = builtin_catalog());
// calibrate/data/published_runs.yaml of the source tree.
std::string builtin_published_runs_path();

}  // namespace fabtrain
