#include "common/limits.hpp"

#include <filesystem>

#include "common/error.hpp"

namespace fabtrain {

void check_limit(std::string_view what, std::int64_t value, const Limit& limit) {
  if (value > limit.max)
    fail("{} is {}; fabtrain handles at most {} ({})", what, value, limit.max, limit.why);
}

void check_file_size(const std::string& path, std::string_view what, const Limit& limit) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec)
    check_limit(fmt::format("{} {}: the size in bytes", what, path), std::int64_t(size), limit);
}

}  // namespace fabtrain
