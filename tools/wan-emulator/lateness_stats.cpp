// Lateness histogram and drop counters of one direction (see lateness_stats.hpp).
#include "lateness_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fabtrain::wan {

LatenessStats::LatenessStats() : histogram_(kHistogramLimitNs / kBucketNs + 1, 0) {}

void LatenessStats::record_sent(int64_t lateness_ns, int64_t bytes) {
  const int64_t late_ns = std::max<int64_t>(lateness_ns, 0);
  const auto bucket = std::min<int64_t>(late_ns / kBucketNs, histogram_.size() - 1);
  ++histogram_[bucket];
  ++forwarded_;
  forwarded_bytes_ += bytes;
  if (late_ns > kLateThresholdNs) ++late_;
  max_ns_ = std::max(max_ns_, late_ns);
}

void LatenessStats::add(const LatenessStats& other) {
  for (size_t i = 0; i < histogram_.size(); ++i) histogram_[i] += other.histogram_[i];
  forwarded_ += other.forwarded_;
  forwarded_bytes_ += other.forwarded_bytes_;
  late_ += other.late_;
  max_ns_ = std::max(max_ns_, other.max_ns_);
  dropped_queue_full += other.dropped_queue_full;
  dropped_no_buffer += other.dropped_no_buffer;
  dropped_oversize += other.dropped_oversize;
  dropped_send_error += other.dropped_send_error;
  dropped_by_kernel += other.dropped_by_kernel;
}

int64_t LatenessStats::quantile_ns(double q) const {
  if (forwarded_ == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * forwarded_));
  uint64_t seen = 0;
  for (size_t i = 0; i < histogram_.size(); ++i) {
    seen += histogram_[i];
    if (seen >= std::max<uint64_t>(rank, 1)) {
      // The last bucket holds everything beyond the histogram: the maximum bounds it.
      if (i + 1 == histogram_.size()) return max_ns_;
      return std::min<int64_t>(static_cast<int64_t>(i) * kBucketNs, max_ns_);
    }
  }
  return max_ns_;
}

bool LatenessStats::too_late(double max_fraction) const {
  return late_ >= kMinLateFrames && double(late_) > max_fraction * double(forwarded_);
}

nlohmann::json LatenessStats::to_json() const {
  return {
      {"forwarded_frames", forwarded_},
      {"forwarded_bytes", forwarded_bytes_},
      {"lateness_p50_us", quantile_ns(0.50) / 1e3},
      {"lateness_p99_us", quantile_ns(0.99) / 1e3},
      {"lateness_max_us", max_ns_ / 1e3},
      {"late_over_1ms", late_},
      {"dropped_queue_full", dropped_queue_full},
      {"dropped_no_buffer", dropped_no_buffer},
      {"dropped_oversize", dropped_oversize},
      {"dropped_send_error", dropped_send_error},
      {"dropped_by_kernel", dropped_by_kernel},
  };
}

static std::string human_time(int64_t ns) {
  if (ns >= 1'000'000) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{} us", ns / 1000);
}

std::string LatenessStats::summary() const {
  return fmt::format(
      "{} frames ({:.1f} MB), lateness p50 {} p99 {} max {}, {} late > 1 ms; dropped: {} queue "
      "full, {} no buffer, {} oversize, {} send error, {} by kernel",
      forwarded_, forwarded_bytes_ / 1e6, human_time(quantile_ns(0.5)),
      human_time(quantile_ns(0.99)), human_time(max_ns_), late_, dropped_queue_full,
      dropped_no_buffer, dropped_oversize, dropped_send_error, dropped_by_kernel);
}

}  // namespace fabtrain::wan
