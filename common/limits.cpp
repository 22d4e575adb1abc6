#include "common/limits.hpp"

#include "common/error.hpp"

namespace fabtrain {

void check_limit(std::string_view what, std::int64_t value, const Limit& limit) {
  if (value > limit.max)
    fail("{} is {}; fabtrain handles at most {} ({})", what, value, limit.max, limit.why);
}

}  // namespace fabtrain
