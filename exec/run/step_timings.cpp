// Gathering one step's instruction timings (see step_timings.hpp).
#include "exec/run/step_timings.hpp"

#include <algorithm>

namespace fabtrain {

StepTimings gather_step_timings(Communicator& comm, int world_group, const Schedule& schedule,
                                const std::vector<InstructionTiming>& mine, double step_start_s,
                                double* earliest_start_s) {
  std::size_t longest = 0;
  for (const auto& s : schedule.ranks) longest = std::max(longest, s.size());
  // Per rank: the step start as two floats (high part and the rest: microsecond precision over
  // days), then (start, duration) per instruction in microseconds from it.
  const std::size_t width = 2 + 2 * longest;
  std::vector<float> send(width, 0.0f), all(width * comm.size(), 0.0f);
  send[0] = float(step_start_s);
  send[1] = float(step_start_s - double(send[0]));
  for (std::size_t i = 0; i < mine.size(); ++i) {
    send[2 + 2 * i] = float(mine[i].start_s * 1e6);
    send[2 + 2 * i + 1] = float(mine[i].duration_s * 1e6);
  }
  comm.all_gather(world_group, send, all);
  std::vector<double> starts(comm.size());
  for (int r = 0; r < comm.size(); ++r)
    starts[r] = double(all[r * width]) + double(all[r * width + 1]);
  const double earliest = *std::min_element(starts.begin(), starts.end());
  if (earliest_start_s) *earliest_start_s = earliest;
  StepTimings timings(comm.size());
  for (int r = 0; r < comm.size(); ++r) {
    const float* row = &all[r * width + 2];
    for (std::size_t i = 0; i < schedule.ranks[r].size(); ++i)
      timings[r].push_back({starts[r] - earliest + row[2 * i] * 1e-6, row[2 * i + 1] * 1e-6});
  }
  return timings;
}

}  // namespace fabtrain
