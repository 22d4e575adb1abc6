#include "common/human_units.hpp"

#include <fmt/format.h>

namespace fabtrain {
namespace {
constexpr double MiB = 1024.0 * 1024;
constexpr double GiB = 1024.0 * MiB;
}  // namespace

std::string format_train_time(double s) {
  if (!(s > 0)) return "-";
  const double hours = s / 3600;
  if (hours < 10) return fmt::format("{:.2f} h", hours);
  if (hours < 100) return fmt::format("{:.1f} h", hours);
  return fmt::format("{:.1f} d", hours / 24);
}

std::string format_gpu_hours(double h) {
  if (!(h > 0)) return "-";
  return h < 10     ? fmt::format("{:.2f}", h)
         : h < 1000 ? fmt::format("{:.1f}", h)
                    : fmt::format("{:.0f}", h);
}

std::string format_bytes(double bytes) {
  if (bytes < GiB) return fmt::format("{:.0f} MiB", bytes / MiB);
  return fmt::format("{:.1f} GiB", bytes / GiB);
}

std::string format_bytes_of(double used, double capacity) {
  if (capacity < GiB) return fmt::format("{:.0f}/{:.0f} MiB", used / MiB, capacity / MiB);
  return fmt::format("{:.1f}/{:.1f} GiB", used / GiB, capacity / GiB);
}

std::string counted(long long n, const std::string& noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

}  // namespace fabtrain
