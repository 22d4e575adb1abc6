// The executor estimates a stage's memory before allocating it and refuses
// what the host cannot hold, with both numbers; a device backend's activations do not count
// against the host.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "exec/model/kernels_layout.hpp"
#include "exec/run/host_memory.hpp"
#include "plan/plan.hpp"
#include "plan/run_record_format.hpp"
#include "plan/schedule.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

TEST_CASE("a stage's memory is estimated from its blocks, and what does not fit is refused") {
  const ModelSpec nano = load_model("gpt2-nano");
  const double bytes = stage_memory_bytes(nano, parse_plan("dp=1"), 0, 4, 64);
  // at least the 16 bytes per parameter of weights, gradients and AdamW's moments
  CHECK(bytes > 16.0 * double(full_layout(nano).total));
  CHECK(stage_memory_bytes(nano, parse_plan("dp=1,recompute=on"), 0, 4, 64) < bytes);
  // ZeRO shards AdamW's moments but the executor keeps packed full-size copies: more, not less
  CHECK(stage_memory_bytes(nano, parse_plan("dp=2,zero=2"), 0, 4, 64) > bytes);
  // the last of several stages holds the tied wte copy
  const Plan pp = parse_plan("pp=2");
  CHECK(stage_memory_bytes(nano, pp, 1, 4, 64) >
        16.0 * (stage_parameters(nano, pp, 1) - double(nano.vocab_size) * nano.n_embd));
  CHECK(host_need_bytes(stage_memory(nano, parse_plan("dp=1"), 0, 4, 64), true) == bytes);
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
  const StageMemory memory = stage_memory(medium, parse_plan("dp=1"), 0, 8, 1024);
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
  const StageMemory memory = stage_memory(medium, parse_plan("dp=1"), 0, 8, 1024);
  const double need = device_need_bytes(memory);
  CHECK(need == doctest::Approx(memory.state + memory.activations));
  check_fits_device(need, need * 1.01, 2 * need);  // fits: no error
  const std::string message =
      test::error_of([&] { check_fits_device(need, 24.0 * (1 << 30), 24.0 * (1 << 30)); });
  CHECK(message.find("GiB of device memory") != std::string::npos);
  CHECK(message.find("24.00 of 24.00 GiB free") != std::string::npos);
}

TEST_CASE("the process's peak resident set grows by what it touches") {
  const auto before = peak_resident_bytes();
  REQUIRE(before.has_value());
  const std::size_t size = std::size_t(*before) + (64u << 20);  // beyond the peak so far
  std::vector<char> buffer(size, 1);                            // touched, so resident
  const auto after = peak_resident_bytes();
  REQUIRE(after.has_value());
  CHECK(*after >= double(size));
  CHECK(buffer[size - 1] == 1);
}

// tests/exec/mpi/rss_vs_model.sh trains a few steps of one plan with --record and runs this case
// with FABTRAIN_RSS_RECORD=FILE; alone (no file given) it is skipped. The prediction is the
// stage's memory the executor refuses on (stage_memory_bytes: fp32 weights, gradients and AdamW
// moments, the held activations, the full parameter vector); the bound leaves 10% either way
// plus 128 MiB above for what the model does not count: the program's code and libraries, MPI's
// buffers and the data loader.
TEST_CASE("the recorded peak resident set of each rank is its stage's predicted memory") {
  const char* path = std::getenv("FABTRAIN_RSS_RECORD");
  if (!path) {
    std::printf("SKIPPED: run by tests/exec/mpi/rss_vs_model.sh, which writes the record\n");
    return;
  }
  std::ifstream in(path);
  std::string line;
  REQUIRE(std::getline(in, line));
  const RunHeader header = run_header_from_json(nlohmann::json::parse(line), "line 1", path);
  std::vector<double> rss;
  for (int n = 2; std::getline(in, line); ++n)
    rss = step_line_from_json(nlohmann::json::parse(line), header.world, fmt::format("line {}", n),
                              path)
              .summary.peak_rss_bytes;
  REQUIRE(int(rss.size()) == header.world);
  const ModelSpec model = load_model(header.model.name);
  const Plan& plan = header.plan;
  for (int r = 0; r < header.world; ++r) {
    const double predicted =
        stage_memory_bytes(model, plan, rank_coord(plan, r).pp, header.microbatch, header.seq);
    CAPTURE(r);
    CAPTURE(predicted / (1 << 20));
    CAPTURE(rss[r] / (1 << 20));
    std::printf("rank %d: peak resident %.0f MiB, predicted %.0f MiB (%+.1f%%)\n", r,
                rss[r] / (1 << 20), predicted / (1 << 20), 100 * (rss[r] - predicted) / predicted);
    CHECK(rss[r] >= 0.9 * predicted);
    CHECK(rss[r] <= 1.1 * predicted + 128.0 * (1 << 20));
  }
}
