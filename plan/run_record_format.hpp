// The run record's lines, one format for its writer (the executor: train and replay) and its
// reader (calibration): JSON lines, one header, then one line per step.
//   {"type":"header","model":{...},"plan":"dp=2,...","world":2,"host":{...},"device":...,
//    "batch":16,"seq":64,"microbatch":8,"steps":10,"start_step":0,"versions":{...}, <mode's own>}
//   {"type":"step","step":0,"wall_s":0.5,"loss":5.1,"lr":1e-3,"grad_norm":1.2,"tokens_per_s":..,
//    ["val_loss":..,] ["peak_rss_bytes":[per rank]]
//    ["instructions":[{"rank","index","kind","comm","name","start_s","duration_s",
//    "bytes","peers"[,"flops"][,"request"]}, ...]]}
// kind is verb() (older records' "optimizer" reads as "opt"); comm says whether the instruction
// is communication (is_communication, plan/verb.hpp), so that no reader keeps a list of verbs
// (older records lack it: read from the kind); name is the schedule's line;
// request (non-blocking transfers only, plan/schedule.hpp) pairs a start with its wait: a start's
// duration is its call, its wait's is the communication the rank could not hide (kind "wait"),
// so a reader fitting a collective's own time skips starts;
// peak_rss_bytes: each rank's peak resident set so far (the CPU executor's; Linux VmHWM), the
// memory its process has held at most, to compare with the memory the plan was predicted to take;
// start_s is from the earliest rank's start of the step, on clocks aligned at the start of the run
// (so ranks compare; exec/comm/clock_alignment.hpp).
// Not here: taking the timings (exec/) or fitting them (calibrate/).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "models/model_spec.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

struct InstructionTiming {
  double start_s = 0;  // from the start of the step (the earliest rank's, once gathered)
  double duration_s = 0;
};
using StepTimings = std::vector<std::vector<InstructionTiming>>;  // [rank][instruction]

struct StepSummary {
  int step = 0;
  double wall_s = 0;
  float loss = 0;
  float lr = 0;
  float grad_norm = 0;
  double tokens_per_s = 0;
  float val_loss = -1;  // < 0: not evaluated this step
  // Per rank: the process's peak resident set so far, in bytes; empty where not measured (the
  // CUDA executor's memory is on its GPU and is not recorded here).
  std::vector<double> peak_rss_bytes;
};

// The header fields train and replay share; each mode adds its own in `extra` (train: lr, seed;
// replay: mode, device_type, precision, calibration, memory).
struct RunHeader {
  ModelSpec model;  // recorded: name, layers, hidden, heads, context, vocab
  Plan plan;
  int world = 1;
  std::string host, cpu, mpi_version;
  int ranks_on_host = 1;
  std::string device;
  int threads = 1;
  int batch = 0, seq = 0, microbatch = 0, steps = 0, start_step = 0;
  int cores = int(std::thread::hardware_concurrency());
  std::string fabtrain_version = FABTRAIN_VERSION,
              compiler = __VERSION__;  // CMake's project(VERSION)
  nlohmann::json extra = nlohmann::json::object();
};
nlohmann::json to_json(const RunHeader& header);
// Strict where calibration depends on it: the plan parses and needs `world` ranks, world, batch
// and seq are whole counts within fabtrain's limits. Older records may lack the model's sizes,
// batch, seq and the host (left at their defaults). Errors name file, where and field.
RunHeader run_header_from_json(const nlohmann::json& line, const std::string& where,
                               const std::string& file);

struct InstructionRecord {
  int rank = 0;
  int index = 0;
  std::string kind;            // verb()
  bool communication = false;  // is_communication(): "comm" in the record
  std::string name;            // the schedule's line, to_string(instruction)
  double start_s = -1;         // < 0: not recorded
  double duration_s = 0;
  double bytes = 0;
  double flops = 0;  // written when > 0
  std::vector<int> peers;
  int request = -1;  // a non-blocking start or its wait; written when >= 0
};
struct StepLine {
  StepSummary summary;
  std::vector<InstructionRecord> instructions;  // empty: the step was not timed
};
// The line of one step: its summary and, when timings are given, every rank's instructions.
StepLine step_line(const StepSummary& summary, const Schedule& schedule,
                   const StepTimings& timings);
nlohmann::json to_json(const StepLine& line);
// Unknown keys are refused; ranks must be within world.
StepLine step_line_from_json(const nlohmann::json& line, int world, const std::string& where,
                             const std::string& file);

// A whole run record read back: its header (also as written, for a mode's own keys) and steps.
// Errors name the file, the line and the field; a record without a header is refused.
struct RunRecordFile {
  RunHeader header;
  nlohmann::json header_json;
  std::vector<StepLine> steps;
};
RunRecordFile read_run_record_file(const std::string& path);

}  // namespace fabtrain
