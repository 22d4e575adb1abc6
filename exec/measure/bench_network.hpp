// Network measurements of `fabtrain-exec bench`, through the executor's own communicator (the
// path training takes): for each pair of ranks the point-to-point latency (small-message
// ping-pong) and bandwidth (a stream of large messages), and all-reduce / reduce-scatter /
// all-gather over all ranks with nccl-tests' algorithm and bus bandwidths. Every rank must call
// each function, in the same order; results are complete on rank 0.
// Not here: compute (exec/measure/bench_compute.hpp).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "exec/comm/communicator.hpp"
#include "exec/measure/bench_timing.hpp"

namespace fabtrain::bench {

struct PairResult {
  int a = 0, b = 0;      // ranks, a < b
  double rtt_s = 0;      // median round trip of a small message
  double rtt_p90_s = 0;  // its 90th percentile
  int rtt_samples = 0;
  double latency_s = 0;      // rtt / 2
  double message_bytes = 0;  // size of each large message
  int messages = 0;          // messages per timed stream
  double stream_s = 0;       // median time from the first send to the acknowledgement
  double bandwidth = 0;      // bytes/s: messages * bytes / (stream_s - rtt)
  // One-way time of a message of each NetworkOptions::message_latency_bytes size: half the
  // median round trip of a ping-pong of that size (pipeline activations cost more than a byte's
  // latency over TCP).
  std::vector<std::pair<double, double>> message_latencies = {};  // (bytes, one-way seconds)
  // TCP over plain sockets, a to b (tcp_streams.hpp), when NetworkOptions::tcp_streams > 0.
  double tcp_one_stream = 0;  // bytes/s with one stream
  double tcp_streams = 0;     // bytes/s with NetworkOptions::tcp_streams streams
};

struct NetworkOptions {
  double latency_bytes = 8;
  int latency_reps = 30;
  std::vector<double> message_latency_bytes;  // extra ping-pong sizes; none by default
  double message_bytes = 4 << 20;
  int messages = 4;
  int stream_reps = 3;
  double budget_s = 3;  // per measurement: repetitions are cut to fit (at least one)
  int tcp_streams = 0;  // > 0: also TCP bandwidth with 1 and this many streams per pair
  double tcp_bytes = 32 << 20;
};

// Requires the communicator's group 0 to be the world (set_groups({all ranks})).
std::vector<PairResult> measure_pairs(Communicator& comm, const NetworkOptions& options);

struct CollectiveResult {
  std::string op;     // all_reduce, reduce_scatter, all_gather
  std::string group;  // the kind of group it ran over: world, or a plan's tp, dp, tied_embedding
  double bytes = 0;   // the full buffer (all-reduce data, reduce-scatter input, all-gather output)
  int ranks = 0;
  double seconds = 0;  // per call, back to back: the median of 3 timings, averaged over ranks
  double algbw = 0;    // bytes / seconds
  double busbw = 0;    // algbw * 2(n-1)/n (all-reduce) or (n-1)/n (the others)
};

// nccl-tests' bus-bandwidth factor for a collective over n ranks.
double bus_factor(const std::string& op, int ranks);

// Over groups of one kind, all of them at once as training runs them (their contention
// included): `group` is this rank's group of that kind (-1: in none, it only keeps step), every
// group of the kind has `group_size` ranks; at each size. Empty when group_size < 2. Every rank
// calls it; group 0 must be the world.
std::vector<CollectiveResult> measure_collectives(Communicator& comm, const std::string& kind,
                                                  int group, int group_size,
                                                  const std::vector<double>& sizes_bytes,
                                                  const NetworkOptions& options);

}  // namespace fabtrain::bench
