// TCP bandwidth between two ranks over plain sockets (what NCCL's socket transport and iperf3
// see), with one or several parallel streams: the receiving rank listens on an ephemeral port
// and tells the sender its addresses through the communicator, the sender opens the streams,
// pushes `bytes` split over them and waits for the receiver's acknowledgement. Measured by
// `fabtrain-exec probe` (and shared with `fabtrain-exec bench`'s pair measurements).
// Not here: round trips (bench_network.hpp's ping-pong).
#pragma once
#include "exec/comm/communicator.hpp"

namespace fabtrain::bench {

struct TcpOptions {
  int streams = 1;
  double bytes = 32 << 20;  // in all, split over the streams
  double timeout_s = 60;    // for connecting and for the whole transfer
};

// Both ranks call it (others do not); returns bytes/s on both (first byte sent to the
// acknowledgement received), throws fabtrain::Error naming the pair and what failed.
double tcp_bandwidth(Communicator& comm, int sender, int receiver, const TcpOptions& options);

}  // namespace fabtrain::bench
