// What a run measured, for calibration and for people: the run record (JSON lines: one header
// with model, plan, hosts, device, threads and versions; then one line per step with wall time,
// loss, tokens/s and every instruction's kind, start, duration, FLOPs or bytes and peers) and
// the Chrome trace JSON (one process per rank, a compute lane and a communication lane, events
// named by plan's to_string(instruction)), to open in Perfetto next to the simulator's.
// Not here: taking the measurements (exec/interpreter.cpp) or gathering them (exec/trainer.cpp).
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

// Seconds from the start of the step (each rank's own clock, after a barrier).
struct InstructionTiming {
  double start_s = 0;
  double duration_s = 0;
};
using StepTimings = std::vector<std::vector<InstructionTiming>>;  // [rank][instruction]

struct InstructionInfo {
  std::string kind;   // fwd, bwd, send, recv, all_reduce, ..., load, optimizer
  bool communication = false;
  double flops = 0;
  double bytes = 0;
  std::vector<int> peers;
};
InstructionInfo describe(const Schedule& schedule, int rank, const Instruction& instruction);

struct StepSummary {
  int step = 0;
  double wall_s = 0;
  float loss = 0;
  float lr = 0;
  float grad_norm = 0;
  double tokens_per_s = 0;
  float val_loss = -1;  // < 0: not evaluated this step
};

// The header fields train and replay share: model, plan, world, host, device, batch and versions.
// Each mode adds its own (train: lr, seed; replay: mode, device_type, calibration, memory).
struct RunHeader {
  ModelSpec model;
  Plan plan;
  int world = 1;
  std::string host, cpu, mpi_version;
  int ranks_on_host = 1;
  std::string device;
  int threads = 1;
  int batch = 0, seq = 0, microbatch = 0, steps = 0, start_step = 0;
};
nlohmann::json to_json(const RunHeader& header);

class RunRecord {
 public:
  explicit RunRecord(const std::string& path);  // truncates; Error if it cannot be written
  void header(const nlohmann::json& header);
  // timings may be empty (not gathered).
  void step(const StepSummary& summary, const Schedule& schedule, const StepTimings& timings);

 private:
  std::string path_;
  std::ofstream out_;
};

class ChromeTrace {
 public:
  explicit ChromeTrace(int ranks);
  // step_offset_s: when this step started, from the start of training.
  void add_step(int step, double step_offset_s, const Schedule& schedule, const StepTimings& timings);
  void write(const std::string& path) const;

 private:
  nlohmann::json events_;
};

}  // namespace fabtrain
