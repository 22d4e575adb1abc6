// Instruction verbs (see verb.hpp).
#include "plan/verb.hpp"

#include <type_traits>

#include "common/error.hpp"

namespace fabtrain {

const char* verb(const Instruction& instruction) {
  return std::visit(
      [](const auto& in) -> const char* {
        using T = std::decay_t<decltype(in)>;
        if constexpr (std::is_same_v<T, LoadMicrobatch>) {
          return "load";
        } else if constexpr (std::is_same_v<T, Forward>) {
          return "fwd";
        } else if constexpr (std::is_same_v<T, Backward>) {
          return "bwd";
        } else if constexpr (std::is_same_v<T, Send>) {
          return "send";
        } else if constexpr (std::is_same_v<T, Recv>) {
          return "recv";
        } else if constexpr (std::is_same_v<T, Collective>) {
          return to_string(in.op);
        } else if constexpr (std::is_same_v<T, OptimizerStep>) {
          return "opt";
        } else {
          static_assert(std::is_same_v<T, Wait>, "a new instruction needs its verb");
          return "wait";
        }
      },
      instruction);
}

std::string canonical_verb(const std::string& kind) {
  if (kind == "optimizer") return "opt";  // run records before the verbs were unified
  return kind;
}

bool is_communication(const Instruction& instruction) {
  return std::holds_alternative<Send>(instruction) || std::holds_alternative<Recv>(instruction) ||
         std::holds_alternative<Collective>(instruction) ||
         std::holds_alternative<Wait>(instruction);
}

bool is_communication_verb(const std::string& verb) {
  // One instruction of each verb: its verb and whether it communicates come from the two above.
  static const Instruction kinds[] = {LoadMicrobatch{},
                                      Forward{},
                                      Backward{},
                                      Send{},
                                      Recv{},
                                      Collective{.op = CollectiveOp::all_reduce},
                                      Collective{.op = CollectiveOp::reduce_scatter},
                                      Collective{.op = CollectiveOp::all_gather},
                                      OptimizerStep{},
                                      Wait{}};
  const std::string canonical = canonical_verb(verb);
  for (const Instruction& in : kinds)
    if (canonical == fabtrain::verb(in)) return is_communication(in);
  fail("'{}' is not an instruction's verb", verb);
}

int request_of(const Instruction& instruction) {
  return std::visit(
      [](const auto& in) {
        if constexpr (requires { in.request; })
          return int(in.request);
        else
          return -1;
      },
      instruction);
}

}  // namespace fabtrain
