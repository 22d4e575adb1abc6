// Waiting on MPI requests against a deadline (see deadline_wait.hpp).
#include "exec/comm/deadline_wait.hpp"

#include <fmt/format.h>
#include <sched.h>

#include "exec/comm/mpi_check.hpp"

namespace fabtrain {

Deadline::Deadline(double limit_s, double grace_s)
    : limit_s_(limit_s),
      at_(std::chrono::steady_clock::now() +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(limit_s > 0 ? limit_s + grace_s : 0))) {}

bool Deadline::passed() const { return limit_s_ > 0 && std::chrono::steady_clock::now() > at_; }

void wait_by_deadline(std::vector<PeerRequest>& requests, const Deadline& deadline,
                      const std::string& what, Communicator& comm) {
  for (;;) {
    bool all_done = true;
    for (auto& r : requests) {
      if (r.request == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_CHECK(MPI_Test(&r.request, &done, MPI_STATUS_IGNORE));
      all_done = all_done && done;
    }
    if (all_done) return;
    if (!deadline.passed()) {
      sched_yield();  // ranks sharing a core (oversubscribed) let the others run
      continue;
    }
    std::vector<int> missing;
    for (const auto& r : requests)
      if (r.request != MPI_REQUEST_NULL) missing.push_back(r.peer);
    comm.abort(fmt::format(
        "{} {} did not answer within --timeout-s {} while {}: dead, stuck, or unreachable over "
        "the launch line's interface",
        missing.size() == 1 ? "rank" : "ranks", fmt::join(missing, ", "), deadline.limit_s(),
        what));
  }
}

}  // namespace fabtrain
