// A symbolic player of a Schedule: all ranks' streams played together, in stream order, with no
// time, threads or devices. Sends are eager (buffered), receives block until the matching send
// (same peer pair and tensor, first in first out; microbatch and bytes must agree), and a
// collective completes when every member of its group has reached it (operation, purpose,
// bytes, microbatch and block must agree; the operation must be its purpose's, see
// collective_pairing.hpp). Non-blocking starts (request >= 0) only register: a started
// collective counts its rank as arrived, a started send is sent (eager), a started receive is
// posted; the Wait with the same request completes when the start can: the collective when every
// member has started or reached it, the send when its receiver has posted the receive (the
// rendezvous of large MPI messages), the receive when its message was sent. Members of a group
// make their calls in the same order, blocking or started. It catches deadlocks, unmatched
// sends, mismatched collectives, a wait without a start, a request reused or waited twice and a
// start never waited (each rank's requests checked first, by request_rules.hpp), and counts what
// each rank holds at its peak. Used by `fabtrain schedule` (which fails when the step would
// deadlock), the plan tests and the plan fuzzer. Not here: any notion of time (sim/) or real work
// (exec/).
#pragma once
#include <string>
#include <vector>

#include "plan/schedule.hpp"

namespace fabtrain {

struct SymbolicRun {
  bool ok = false;
  // Empty when ok; else the stuck ranks and their next instruction, or the mismatch.
  std::string message;
  std::vector<int> instructions_done;  // per rank
  std::vector<int> peak_in_flight;     // per rank: microbatches forwarded, not yet backwarded
  std::vector<double> peak_activation_bytes;  // per rank: Forward's activation_bytes until Backward
  std::vector<double> peak_request_bytes;     // per rank: bytes of started, not yet waited requests
};

SymbolicRun symbolic_run(const Schedule& schedule);

}  // namespace fabtrain
