// The operation of each collective purpose (see collective_pairing.hpp).
#include "plan/collective_pairing.hpp"

#include <fmt/format.h>

namespace fabtrain {

CollectiveOp op_for(Purpose purpose) {
  switch (purpose) {
    case Purpose::zero_gradients:
      return CollectiveOp::reduce_scatter;
    case Purpose::zero_parameters:
    case Purpose::pipeline_gather:
      return CollectiveOp::all_gather;
    case Purpose::tp_forward:
    case Purpose::tp_backward:
    case Purpose::dp_gradients:
    case Purpose::tied_embedding:
    case Purpose::grad_norm:
      return CollectiveOp::all_reduce;
  }
  return CollectiveOp::all_reduce;
}

std::optional<std::string> pairing_error(const Collective& c) {
  if (c.op == op_for(c.purpose)) return std::nullopt;
  return fmt::format("purpose {} needs op {}, not {}", to_string(c.purpose),
                     to_string(op_for(c.purpose)), to_string(c.op));
}

}  // namespace fabtrain
