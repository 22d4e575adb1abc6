// `fabtrain-exec bench` from start to end on one rank: resolve the model's shapes, measure the
// matrix products and memory kernels on every rank at once (as training would load the
// machine), then the network pair by pair and the collectives over all ranks, and gather it
// all into one JSON document on rank 0 (the bench file `fabtrain calibrate --bench` reads).
// Not here: the command line (apps/fabtrain-exec/cmd_bench.cpp) or any fitting (calibrate/).
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exec/comm/mpi_communicator.hpp"

namespace fabtrain {

struct BenchConfig {
  std::string device = "cpu";
  std::string model = "gpt2-nano";
  int batch = 4;           // sequences per microbatch on one rank (B)
  int seq = 64;            // tokens per sequence (T)
  int threads = 0;         // OpenMP threads per rank; 0: cores / ranks per host
  double budget_s = 1.0;   // per measurement
  double memory_mib = 32;  // per array of the memory kernels
  double latency_bytes = 8;
  // Extra ping-pong sizes for message latencies; the benched shapes' pipeline activation
  // (batch x seq x hidden floats) is always measured.
  std::vector<double> message_bytes;
  double p2p_mib = 4;  // per message of the bandwidth stream
  int p2p_messages = 4;
  int tcp_streams = 0;  // > 0: also TCP bandwidth per pair with 1 and this many streams
  double tcp_mib = 32;
  std::vector<double> collective_mib = {1, 8};
  // A plan over the ranks: collectives are measured over each kind of its groups (tp, dp, tied
  // embedding) as well as the world; empty: the world only.
  std::string plan;
  std::string output = "bench.json";  // "-": standard output (the JSON alone)
  std::FILE* text = stdout;           // the progress lines and the table; stderr under "-"
};

inline constexpr int kBenchFormatVersion = 1;

// Every rank calls it; the document is complete on rank 0 (other ranks get an empty one).
nlohmann::json run_bench(const BenchConfig& config, MpiCommunicator& comm);

}  // namespace fabtrain
