#include "selector/launch_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "plan/executor_support.hpp"

namespace fabtrain {
namespace {

// Quoted for a POSIX shell when it holds anything but the characters paths and plans use.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string("_./:=,+-@%").find(c) != std::string::npos;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// "--host a:2,b:2" when each VM's ranks are consecutive (mpirun fills the hosts in order, each to
// its slots); otherwise Open MPI's sequential mapper over one host per rank.
std::string placement(const std::vector<std::string>& rank_vms) {
  std::vector<std::pair<std::string, int>> runs;
  for (const auto& vm : rank_vms)
    if (!runs.empty() && runs.back().first == vm)
      ++runs.back().second;
    else
      runs.push_back({vm, 1});
  bool consecutive = true;
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t j = i + 1; j < runs.size(); ++j)
      consecutive = consecutive && runs[i].first != runs[j].first;
  std::string hosts;
  if (consecutive) {
    for (const auto& [vm, n] : runs)
      hosts += fmt::format("{}{}:{}", hosts.empty() ? "" : ",", vm, n);
    return "--host " + shell_word(hosts);
  }
  for (const auto& vm : rank_vms) hosts += (hosts.empty() ? "" : ",") + vm;
  return "--mca rmaps seq --host " + shell_word(hosts);
}

}  // namespace

LaunchLine launch_line(const std::string& model_arg, const Slice& slice, const Evaluated& e,
                       int seq) {
  const Plan& plan = e.candidate.plan;
  const auto gpus = slice.gpus();
  LaunchLine out;
  bool cpu = true;
  for (int r = 0; r < plan.ranks(); ++r) {
    const SliceGpu& g = gpus.at(device_of(plan, r));
    out.rank_vms.push_back(slice.vms[g.vm].name);
    cpu = cpu && g.type->is_cpu;
  }
  out.device = cpu ? "cpu" : "cuda";
  if (const auto why = why_not_runnable(plan, cpu ? ExecutorDevice::cpu : ExecutorDevice::cuda))
    out.simulate_only = "simulate-only: " + *why;
  std::string device_flags;
  if (!cpu) device_flags = " --device cuda";
  if (!cpu && plan.precision == Precision::tf32) device_flags += " --precision tf32";
  out.command = fmt::format(
      "mpirun -np {} {} fabtrain-exec train --model {} --plan {} --batch {} "
      "--seq {}{} --data TRAIN_TOKENS.bin",
      plan.ranks(), placement(out.rank_vms), shell_word(model_arg), to_string(plan),
      e.candidate.global_batch, seq, device_flags);
  return out;
}

}  // namespace fabtrain
