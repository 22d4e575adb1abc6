// What one instruction of a rank's stream is, in the terms records and traces share: its verb,
// whether it is communication, its FLOPs and bytes, its microbatch and the ranks it talks to.
// Used by the run record, the executor's trace and the simulator's trace.
#pragma once
#include <string>
#include <vector>

#include "plan/schedule.hpp"

namespace fabtrain {

struct InstructionInfo {
  std::string kind;  // verb(): fwd, bwd, send, recv, all_reduce, ..., load, opt
  bool communication = false;
  double flops = 0;
  double bytes = 0;
  int mb = -1;             // microbatch, or -1 for once per step
  std::vector<int> peers;  // the other ranks of a transfer or a collective's group
};
InstructionInfo describe(const Schedule& schedule, int rank, const Instruction& instruction);

}  // namespace fabtrain
