// Drop-tail queue + serialiser + propagation delay for one direction (see link_model.hpp).
#include "link_model.hpp"

#include <algorithm>
#include <cmath>

namespace fabtrain::wan {

LinkModel::LinkModel(const LinkParameters& parameters) : parameters_(parameters) {}

int64_t LinkModel::serialisation_ns(int64_t bytes) const {
  return static_cast<int64_t>(std::llround(bytes * 8.0 * 1e9 / parameters_.rate_bits_per_s));
}

int64_t LinkModel::backlog_bytes(int64_t now_ns) const {
  if (parameters_.rate_bits_per_s <= 0 || serialiser_free_ns_ <= now_ns) return 0;
  return static_cast<int64_t>((serialiser_free_ns_ - now_ns) * parameters_.rate_bits_per_s / 8e9);
}

std::optional<int64_t> LinkModel::admit(int64_t arrival_ns, int64_t bytes) {
  if (parameters_.rate_bits_per_s <= 0) return arrival_ns + parameters_.delay_ns;
  // The frame is accepted only if it fits behind what is already queued.
  if (backlog_bytes(arrival_ns) + bytes > parameters_.queue_limit_bytes) return std::nullopt;
  const int64_t start_ns = std::max(arrival_ns, serialiser_free_ns_);
  serialiser_free_ns_ = start_ns + serialisation_ns(bytes);
  return serialiser_free_ns_ + parameters_.delay_ns;
}

}  // namespace fabtrain::wan
