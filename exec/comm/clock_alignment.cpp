// Aligning the ranks' clocks to rank 0's (see clock_alignment.hpp).
#include "exec/comm/clock_alignment.hpp"

#include <array>
#include <cstring>
#include <limits>

namespace fabtrain {
namespace {

// Far above message_tag() of any microbatch (limits::microbatches), within MPI's guaranteed 32767.
constexpr int kClockTag = 32000;

// A double travels as the bits of two floats: the communicator moves floats, unconverted.
void send_double(Communicator& comm, int peer, double value) {
  std::array<float, 2> bits;
  std::memcpy(bits.data(), &value, sizeof value);
  comm.send(peer, bits, kClockTag);
}

double recv_double(Communicator& comm, int peer) {
  std::array<float, 2> bits;
  comm.recv(peer, bits, kClockTag);
  double value;
  std::memcpy(&value, bits.data(), sizeof value);
  return value;
}

}  // namespace

AlignedClock align_clocks(Communicator& comm, int rounds) {
  static_assert(sizeof(double) == 2 * sizeof(float));
  comm.barrier();
  const AlignedClock::Clock::time_point origin = AlignedClock::Clock::now();
  const AlignedClock local(origin, 0.0);
  auto now = [&] { return local.seconds(AlignedClock::Clock::now()); };
  if (comm.rank() != 0) {
    for (int k = 0; k < rounds; ++k) {
      recv_double(comm, 0);
      send_double(comm, 0, now());
    }
    return AlignedClock(origin, recv_double(comm, 0));
  }
  for (int peer = 1; peer < comm.size(); ++peer) {
    double best_rtt = std::numeric_limits<double>::infinity(), offset = 0;
    for (int k = 0; k < rounds; ++k) {
      const double t0 = now();
      send_double(comm, peer, t0);
      const double their = recv_double(comm, peer);
      const double t1 = now();
      if (t1 - t0 < best_rtt) {
        best_rtt = t1 - t0;
        offset = (t0 + t1) / 2 - their;
      }
    }
    send_double(comm, peer, offset);
  }
  return local;
}

}  // namespace fabtrain
