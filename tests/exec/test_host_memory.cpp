// The executor estimates a stage's memory before allocating it and refuses
// what the host cannot hold, with both numbers.
#include <doctest/doctest.h>

#include "exec/model/kernels_layout.hpp"
#include "exec/run/host_memory.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

TEST_CASE("a stage's memory is estimated from its blocks, and what does not fit is refused") {
  const ModelSpec nano = load_model("gpt2-nano");
  const BlockRange all{0, block_count(nano)};
  const double bytes = stage_memory_bytes(nano, all, 1, 4, 64, 1, false);
  // at least the 16 bytes per parameter of weights, gradients and AdamW's moments
  CHECK(bytes > 16.0 * double(full_layout(nano).total));
  CHECK(stage_memory_bytes(nano, all, 1, 4, 64, 1, true) < bytes);  // recomputation keeps less
  REQUIRE(host_available_bytes().has_value());
  check_fits_host(bytes, 1);
  const std::string message = test::error_of([] { check_fits_host(1e18, 2); });
  CHECK(message.find("per rank (2 ranks on this host") != std::string::npos);
  CHECK(message.find("GiB available") != std::string::npos);
}
