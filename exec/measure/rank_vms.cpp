#include "exec/measure/rank_vms.hpp"

#include <algorithm>

namespace fabtrain {

std::vector<int> ranks_to_vms(const Slice& slice, const std::vector<std::string>& hosts) {
  auto index_of = [&](const std::string& name) {
    for (std::size_t i = 0; i < slice.vms.size(); ++i)
      if (slice.vms[i].name == name) return int(i);
    return -1;
  };
  std::vector<int> by_host;
  for (const auto& h : hosts) by_host.push_back(index_of(h));
  if (std::all_of(by_host.begin(), by_host.end(), [](int v) { return v >= 0; })) return by_host;
  if (hosts.size() != slice.vm_file_order.size()) return {};
  std::vector<int> by_file;
  for (const auto& name : slice.vm_file_order) by_file.push_back(index_of(name));
  return by_file;
}

}  // namespace fabtrain
