// Gathering one step's instruction timings (see step_timings.hpp).
#include "exec/step_timings.hpp"

#include <algorithm>

namespace fabtrain {

StepTimings gather_step_timings(Communicator& comm, int world_group, const Schedule& schedule,
                                const std::vector<InstructionTiming>& mine) {
  std::size_t longest = 0;
  for (const auto& s : schedule.ranks) longest = std::max(longest, s.size());
  std::vector<float> send(2 * longest, 0.0f), all(2 * longest * comm.size(), 0.0f);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    send[2 * i] = float(mine[i].start_s * 1e6);
    send[2 * i + 1] = float(mine[i].duration_s * 1e6);
  }
  comm.all_gather(world_group, send, all);
  StepTimings timings(comm.size());
  for (int r = 0; r < comm.size(); ++r)
    for (std::size_t i = 0; i < schedule.ranks[r].size(); ++i)
      timings[r].push_back({all[2 * (r * longest + i)] * 1e-6, all[2 * (r * longest + i) + 1] * 1e-6});
  return timings;
}

}  // namespace fabtrain
