// overlap_warning (see overlap_check.hpp).
#include "exec/run/overlap_check.hpp"

#include <fmt/format.h>

namespace fabtrain {

std::string overlap_warning(const Plan& plan, const Communicator& comm) {
  if (!plan.overlap || comm.can_overlap()) return "";
  return fmt::format(
      "warning: plan {} asks for overlap=on, but the {} communicator cannot overlap ({}): "
      "its transfers run when waited, not behind the compute (overlap=off says the same plan "
      "blocking)",
      to_string(plan), comm.name(), comm.overlap_note());
}

}  // namespace fabtrain
