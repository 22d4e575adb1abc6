// What calibration reads: bench files (written by `fabtrain-exec bench`) and executor run records
// (JSON lines, plan/run_record_format.hpp), reduced to the samples the fits need. Unknown keys and
// missing or non-numeric fields are errors naming the file, the line and the field.
// Not here: the fits (calibrate/fit_compute.hpp, calibrate/fit_links.hpp).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "models/model_spec.hpp"

namespace fabtrain::calib {

struct GemmSample {
  std::string name, pass;  // qkv/...; forward, backward_input, backward_weight
  double flops = 0;
  double seconds = 0;  // median over the ranks
};
struct MemorySample {
  std::string kernel;  // copy, triad, layernorm
  double bytes = 0;
  double seconds = 0;  // median over the ranks
};
struct PairSample {
  int a = 0, b = 0;
  double rtt_s = 0;
  double bandwidth = 0;      // bytes/s
  double message_bytes = 0;  // of the stream's messages; 0 where the bench did not say
  // (bytes, one-way s); may be empty.
  std::vector<std::pair<double, double>> message_latencies = {};
  std::string host_a = {}, host_b = {};  // where a and b ran; empty where the bench did not say
};
struct CollectiveSample {
  std::string op;
  double bytes = 0, seconds = 0, busbw = 0;
  int ranks = 0;
};

struct BenchData {
  std::string path;
  std::string model;  // the model whose shapes were measured (a name or config path)
  nlohmann::json model_fields;
  int batch = 0, seq = 0, world = 0, threads = 0;
  std::vector<std::string> hosts;
  std::string device;  // description
  std::vector<GemmSample> gemm;
  std::vector<MemorySample> memory;
  std::vector<PairSample> pairs;
  std::vector<CollectiveSample> collectives;
};
// The pairs of a bench that sample the link between machines: where its pairs span hosts, the
// pairs inside one host (its own loopback, not the link) are left out; otherwise all of them (a
// bench of one VM's ranks samples that VM's path).
std::vector<PairSample> pairs_across_hosts(const BenchData& bench);

BenchData read_bench(const std::string& path);
BenchData parse_bench(const nlohmann::json& doc, const std::string& path);

// One compute instruction of a step as the executor measured it.
struct ComputeSample {
  std::string kind;  // verb(): fwd, bwd, opt
  int rank = 0;
  double flops = 0, bytes = 0;
  int blocks = 1;  // the simulator's kernel count (blocks end - begin; 1 for the optimizer)
  double duration_s = 0;
};
// One collective call of a step, matched across ranks by the instruction's name and its
// occurrence in the rank's stream: from the last member's arrival to the last member's end (the
// span the simulator plays; start_s is step-relative on every rank), or without start times the
// shortest member's duration.
struct CollectiveCallSample {
  std::string op;  // all_reduce, reduce_scatter, all_gather
  double bytes = 0;
  double seconds = 0;
  int members = 0;                          // ranks that recorded it
  double last_start_s = 0, last_end_s = 0;  // while reading
};
struct StepSample {
  int step = 0;
  double wall_s = 0;
  std::vector<ComputeSample> compute;
  std::vector<double> communication_s;  // per rank: the sum of its communication instructions
  std::vector<double> other_s;          // per rank: loads and anything not fitted
  std::vector<CollectiveCallSample> collectives;
};
struct RunData {
  std::string path;
  std::string plan, model;
  nlohmann::json model_fields;  // the header's model: name, layers, hidden, heads, context, vocab
  int batch = 0, seq = 0;       // global batch in sequences, sequence length (0: not recorded)
  int world = 0;
  std::vector<StepSample> steps;  // only steps that carry instruction timings
};
RunData read_run_record(const std::string& path);

// The model a bench file or run header describes by its fields (layers, hidden, heads, context,
// vocab). Throws fabtrain::Error naming the file when one is missing or out of range.
ModelSpec model_of(const nlohmann::json& fields, const std::string& name, const std::string& path);

}  // namespace fabtrain::calib
