#include "selector/launch_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "plan/executor_support.hpp"
#include "platforms/data_plane.hpp"

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

// Runs of consecutive ranks on one VM: [(vm, ranks)], in rank order.
std::vector<std::pair<std::string, int>> vm_runs(const std::vector<std::string>& rank_hosts) {
  std::vector<std::pair<std::string, int>> runs;
  for (const auto& vm : rank_hosts)
    if (!runs.empty() && runs.back().first == vm)
      ++runs.back().second;
    else
      runs.push_back({vm, 1});
  return runs;
}

// Whether each VM's ranks are consecutive: mpirun then fills the hosts in order, each to its
// slots; otherwise Open MPI's sequential mapper places one rank per listed host.
bool consecutive(const std::vector<std::pair<std::string, int>>& runs) {
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t j = i + 1; j < runs.size(); ++j)
      if (runs[i].first == runs[j].first) return false;
  return true;
}

std::string hostfile_text(const std::vector<std::string>& rank_hosts) {
  const auto runs = vm_runs(rank_hosts);
  std::string out = "# fabtrain: one line per VM in rank order (slots: its ranks)\n";
  if (!consecutive(runs)) {
    out = "# fabtrain: one line per rank, for mpirun --mca rmaps seq\n";
    for (const auto& h : rank_hosts) out += h + "\n";
    return out;
  }
  for (const auto& [h, n] : runs) out += fmt::format("{} slots={}\n", h, n);
  return out;
}

std::string placement(const std::vector<std::string>& rank_hosts, const std::string& hostfile) {
  const auto runs = vm_runs(rank_hosts);
  const std::string seq = consecutive(runs) ? "" : "--mca rmaps seq ";
  if (!hostfile.empty()) return seq + "--hostfile " + shell_word(hostfile);
  std::string hosts;
  if (seq.empty())
    for (const auto& [h, n] : runs) hosts += fmt::format("{}{}:{}", hosts.empty() ? "" : ",", h, n);
  else
    for (const auto& h : rank_hosts) hosts += (hosts.empty() ? "" : ",") + h;
  return seq + "--host " + shell_word(hosts);
}

std::string comma_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

// mpirun's options that keep both libraries on the data plane of the networks crossed.
std::string interface_flags(const DataPlaneSelection& dp, bool nccl) {
  if (dp.networks.empty()) return "";
  std::string out;
  const bool include = !dp.mpi_include.empty();
  const std::string list = shell_word(comma_list(include ? dp.mpi_include : dp.mpi_exclude));
  for (const char* part : {"btl", "oob"})
    out += fmt::format(" --mca {}_tcp_if_{} {}", part, include ? "include" : "exclude", list);
  if (nccl) out += " -x " + shell_word("NCCL_SOCKET_IFNAME=" + dp.nccl_socket_ifname);
  return out;
}

// Ranks on several VMs reach each other by the hostfile's names: a VM without `address:` is
// named by its VM name, which resolves to its data-plane address only if the user made it so.
std::optional<std::string> missing_addresses_note(const std::vector<const Vm*>& rank_vms) {
  std::vector<const Vm*> used;
  for (const Vm* vm : rank_vms)
    if (std::find(used.begin(), used.end(), vm) == used.end()) used.push_back(vm);
  if (used.size() < 2) return std::nullopt;
  std::vector<std::string> missing;
  for (const Vm* vm : used)
    if (vm->address.empty()) missing.push_back(vm->name);
  if (missing.empty()) return std::nullopt;
  const bool one = missing.size() == 1;
  return fmt::format(
      "{} {} {} no `address:` in the slice, so the hostfile names {} by VM name: give {} "
      "data-plane "
      "address (`address: 10.x.y.z` on {} line) unless the name resolves to it",
      one ? "VM" : "VMs", fmt::join(missing, ", "), one ? "has" : "have", one ? "it" : "them",
      one ? "its" : "each its", one ? "its" : "each VM's");
}

}  // namespace

bool is_mpi_profile(const CommunicatorProfile& profile) {
  return profile.name.rfind("openmpi", 0) == 0 || profile.name.rfind("mpi", 0) == 0;
}

LaunchLine launch_line(const std::string& model_arg, const Slice& slice, const Evaluated& e,
                       int seq, const std::string& hostfile_path) {
  const Plan& plan = e.candidate.plan;
  const auto gpus = slice.gpus();
  LaunchLine out;
  bool cpu = true;
  std::vector<std::string> rank_hosts;
  std::vector<const Vm*> rank_vms;
  for (int r = 0; r < plan.ranks(); ++r) {
    const SliceGpu& g = gpus.at(device_of(plan, r));
    const Vm& vm = slice.vms[g.vm];
    rank_vms.push_back(&vm);
    out.rank_vms.push_back(vm.name);
    rank_hosts.push_back(vm.address.empty() ? vm.name : vm.address);
    cpu = cpu && g.type->is_cpu;
  }
  out.device = cpu ? "cpu" : "cuda";
  if (const auto why = why_not_runnable(plan, cpu ? ExecutorDevice::cpu : ExecutorDevice::cuda))
    out.simulate_only = "simulate-only: " + *why;
  const bool mpi_profile = is_mpi_profile(slice.communicator);
  out.comm = cpu || mpi_profile ? "mpi" : "nccl";
  if (cpu && !mpi_profile)
    out.notes.push_back(fmt::format(
        "the CPU executor communicates over Open MPI, the prediction assumed {}: plan with "
        "--communicator openmpi-tcp to compare like with like",
        slice.communicator.name));
  if (auto note = missing_addresses_note(rank_vms)) out.notes.push_back(*note);
  const DataPlaneSelection dp = data_plane_for(slice, out.rank_vms, out.comm == "nccl");
  out.notes.insert(out.notes.end(), dp.notes.begin(), dp.notes.end());
  out.hostfile = hostfile_text(rank_hosts);
  out.hostfile_path = hostfile_path;
  std::string device_flags;
  if (!cpu) device_flags = " --device cuda";
  if (!cpu && plan.precision != Precision::fp32)
    device_flags += fmt::format(" --precision {}", to_string(plan.precision));
  if (!cpu && mpi_profile) device_flags += " --comm mpi";
  out.command = fmt::format(
      "mpirun -np {} {}{} fabtrain-exec train --model {} --plan {} --batch {} "
      "--seq {}{} --data TRAIN_TOKENS.bin",
      plan.ranks(), placement(rank_hosts, hostfile_path), interface_flags(dp, out.comm == "nccl"),
      shell_word(model_arg), to_string(plan), e.candidate.global_batch, seq, device_flags);
  return out;
}

}  // namespace fabtrain
