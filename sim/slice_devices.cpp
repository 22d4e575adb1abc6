// Mapping ranks to the slice's GPUs, with errors that name the plan and the slice.
#include "sim/slice_devices.hpp"

#include "common/error.hpp"

namespace fabtrain {

std::vector<RankDevice> slice_devices(const Slice& slice, const Schedule& schedule) {
  if (!slice.catalog) fail("slice '{}' has no catalog", slice.name);
  const auto gpus = slice.gpus();
  const int needed = schedule.plan.ranks();
  if (schedule.world != needed || int(schedule.ranks.size()) != needed)
    fail("schedule has {} ranks but its plan {} needs {}", schedule.ranks.size(),
         to_string(schedule.plan), needed);
  if (needed > int(gpus.size()))
    fail("plan {} needs {} GPUs but slice '{}' has {}", to_string(schedule.plan), needed,
         slice.name, gpus.size());
  std::vector<RankDevice> devices(needed);
  std::vector<int> used(gpus.size(), -1);
  for (int r = 0; r < needed; ++r) {
    const int g = device_of(schedule.plan, r);
    if (g < 0 || g >= int(gpus.size()))
      fail("plan {}: rank {} maps to GPU {} but slice '{}' has GPUs 0..{}",
           to_string(schedule.plan), r, g, slice.name, int(gpus.size()) - 1);
    if (used[g] >= 0)
      fail("plan {}: ranks {} and {} both map to GPU {} of slice '{}'", to_string(schedule.plan),
           used[g], r, g, slice.name);
    used[g] = r;
    devices[r].gpu = g;
    devices[r].vm = gpus[g].vm;
    devices[r].type = gpus[g].type;
    devices[r].site = slice.vms[gpus[g].vm].site;
    if (!devices[r].type) fail("slice '{}': GPU {} has no type", slice.name, g);
  }
  return devices;
}

}  // namespace fabtrain
