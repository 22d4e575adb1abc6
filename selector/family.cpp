#include "selector/family.hpp"

namespace fabtrain {

const char* to_string(Family family) {
  switch (family) {
    case Family::data_parallel:
      return "data parallel";
    case Family::zero:
      return "ZeRO";
    case Family::shard:
      return "shard";
    case Family::pipeshard:
      return "pipeshard";
  }
  return "data parallel";
}

Family family_of(const Plan& plan) {
  if (plan.pp > 1) return Family::pipeshard;
  if (plan.tp > 1) return Family::shard;
  if (plan.zero > 0) return Family::zero;
  return Family::data_parallel;
}

}  // namespace fabtrain
