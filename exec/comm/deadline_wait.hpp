// Waiting on MPI requests against a deadline, for checks run across ranks (the preflight) that
// must end in bounded time when a peer is dead, stuck or unreachable, and say which peer. Not the
// Watchdog (watchdog.hpp), which times one wait of a training step and cannot name the peer that
// is missing; here every request carries its peer.
#pragma once
#include <mpi.h>

#include <chrono>
#include <string>
#include <vector>

#include "exec/comm/communicator.hpp"

namespace fabtrain {

// The moment a whole check must be over: limit_s (the user's, as messages quote it) plus grace_s
// (a rank that should let another speak first waits longer); limit_s <= 0: never.
class Deadline {
 public:
  explicit Deadline(double limit_s, double grace_s = 0);
  bool passed() const;
  double limit_s() const { return limit_s_; }

 private:
  double limit_s_;
  std::chrono::steady_clock::time_point at_;
};

struct PeerRequest {
  MPI_Request request = MPI_REQUEST_NULL;
  int peer = 0;
};

// Completes every request (polling, so a completion is seen at once: round trips stay exact), or
// once the deadline has passed ends the job through comm.abort with a message naming the ranks
// whose requests are still open and `what` they were doing ("sending its facts to rank 0").
void wait_by_deadline(std::vector<PeerRequest>& requests, const Deadline& deadline,
                      const std::string& what, Communicator& comm);

}  // namespace fabtrain
