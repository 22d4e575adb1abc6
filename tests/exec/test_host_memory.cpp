// The executor estimates a stage's memory before allocating it and refuses
// what the host cannot hold, with both numbers; a device backend's activations do not count
// against the host.
#include <doctest/doctest.h>

#include "exec/model/kernels_layout.hpp"
#include "exec/run/host_memory.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

TEST_CASE("a stage's memory is estimated from its blocks, and what does not fit is refused") {
  const ModelSpec nano = load_model("gpt2-nano");
  const BlockRange all{0, block_count(nano)};
  const double bytes = host_need_bytes(stage_memory(nano, all, 1, 4, 64, 1, false), true);
  // at least the 16 bytes per parameter of weights, gradients and AdamW's moments
  CHECK(bytes > 16.0 * double(full_layout(nano).total));
  // recomputation keeps less
  CHECK(host_need_bytes(stage_memory(nano, all, 1, 4, 64, 1, true), true) < bytes);
  REQUIRE(host_available_bytes().has_value());
  check_fits_host(bytes, 1);
  const std::string message = test::error_of([] { check_fits_host(1e18, 2); });
  CHECK(message.find("per rank (2 ranks on this host") != std::string::npos);
  CHECK(message.find("GiB available") != std::string::npos);
}

TEST_CASE("on a device backend the host holds the model state, not the activations") {
  // GPT-2 medium, batch 8 x 1024 in one microbatch: tens of GB of activations, which live on
  // the GPU; the host keeps the fp32 state (16 bytes per parameter) and the full vector.
  const ModelSpec medium = load_model("gpt2-medium");
  const BlockRange all{0, block_count(medium)};
  const StageMemory memory = stage_memory(medium, all, 1, 8, 1024, 1, false);
  CHECK(memory.activations > 10e9);
  const double host_cpu = host_need_bytes(memory, true);
  const double host_cuda = host_need_bytes(memory, false);
  CHECK(host_cpu - host_cuda == doctest::Approx(memory.activations));
  const double parameters = double(medium.parameters());
  CHECK(host_cuda == doctest::Approx(16.0 * parameters + 4.0 * parameters).epsilon(0.05));
  CHECK(host_cuda < 8e9);
}

TEST_CASE("a device that cannot hold the stage's state and activations is refused with both") {
  const ModelSpec medium = load_model("gpt2-medium");
  const StageMemory memory = stage_memory(medium, {0, block_count(medium)}, 1, 8, 1024, 1, false);
  const double need = device_need_bytes(memory);
  CHECK(need == doctest::Approx(memory.state + memory.activations));
  check_fits_device(need, need * 1.01, 2 * need);  // fits: no error
  const std::string message =
      test::error_of([&] { check_fits_device(need, 24.0 * (1 << 30), 24.0 * (1 << 30)); });
  CHECK(message.find("GiB of device memory") != std::string::npos);
  CHECK(message.find("24.00 of 24.00 GiB free") != std::string::npos);
}
