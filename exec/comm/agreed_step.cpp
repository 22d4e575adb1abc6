#include "exec/comm/agreed_step.hpp"

#include <span>
#include <string>

#include "common/error.hpp"

namespace fabtrain {

void run_agreed_step(Communicator& comm, int group, const std::function<void()>& step) {
  std::string error;
  try {
    step();
  } catch (const Error& e) {
    error = e.what();
  }
  float failed_ranks = error.empty() ? 0.0f : 1.0f;
  comm.all_reduce(group, std::span<float>(&failed_ranks, 1));
  if (!error.empty()) throw JobWideError(error, false);
  if (failed_ranks > 0)
    throw JobWideError(fmt::format("rank {}: another rank refused the job's start", comm.rank()),
                       true);
}

}  // namespace fabtrain
