// Instruction descriptions for records and traces (see instruction_info.hpp).
#include "plan/instruction_info.hpp"

#include <type_traits>

#include "plan/verb.hpp"

namespace fabtrain {

InstructionInfo describe(const Schedule& schedule, int rank, const Instruction& instruction) {
  InstructionInfo info;
  info.kind = verb(instruction);
  info.communication = is_communication(instruction);
  std::visit(
      [&](const auto& in) {
        using T = std::decay_t<decltype(in)>;
        if constexpr (std::is_same_v<T, LoadMicrobatch>) {
          info.mb = in.mb;
          info.bytes = double(in.tokens) * 2 * sizeof(int);  // inputs and targets
        } else if constexpr (std::is_same_v<T, Forward> || std::is_same_v<T, Backward>) {
          info.mb = in.mb;
          info.flops = in.flops;
          info.bytes = in.bytes;
        } else if constexpr (std::is_same_v<T, Send> || std::is_same_v<T, Recv>) {
          info.mb = in.mb;
          info.bytes = in.bytes;
          info.peers = {in.peer};
        } else if constexpr (std::is_same_v<T, Collective>) {
          info.mb = in.mb;
          info.bytes = in.bytes;
          if (in.group >= 0 && in.group < int(schedule.groups.size()))
            for (int r : schedule.groups[in.group])
              if (r != rank) info.peers.push_back(r);
        } else if constexpr (std::is_same_v<T, OptimizerStep>) {
          info.bytes = in.bytes;
          info.flops = in.parameters * 12;  // AdamW: about a dozen operations per parameter
        } else {
          static_assert(std::is_same_v<T, Wait>, "a new instruction needs describing");
          info.bytes = in.bytes;  // the start's peers are on the start's line
        }
      },
      instruction);
  return info;
}

}  // namespace fabtrain
