// The validation matrix as the emulated-link validation reads it: every mode of the built-in
// file loads with the lists the script loops over and the limits its checking modes judge;
// what the file must not say is refused by file, place and value.
#include <doctest/doctest.h>

#include <fstream>

#include "calibrate/validation_matrix.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::error_of;

TEST_CASE("the built-in validation matrix: its modes' cases, limits where the script judges") {
  const std::string path = builtin_validation_matrix_path();
  const ValidationMode short_mode = load_validation_mode(path, "short");
  CHECK(short_mode.models == std::vector<std::string>{"gpt2-nano"});
  CHECK(short_mode.plans == std::vector<std::string>{"dp=2", "tp=2"});
  CHECK(short_mode.delays == std::vector<std::string>{"0", "25"});
  REQUIRE(short_mode.pass);
  CHECK_FALSE(short_mode.pass->bench_only);
  CHECK(short_mode.pass->max_error_pct == 25);
  const ValidationMode full = load_validation_mode(path, "full-size-short");
  CHECK(full.full_size);
  CHECK(full.ratio_name == "dp/pipeshard");
  CHECK(full.ratio_over == "dp=2,pp=2,mb=8,schedule=1f1b");
  REQUIRE(full.pass);
  CHECK(full.pass->bench_only);
  CHECK(full.pass->max_error_pct == 40);
  CHECK_FALSE(load_validation_mode(path, "default").pass);
  CHECK(load_validation_mode(path, "full-size").delays.back() == "51.5");
}

// How the cases run is data too: the full-size modes replay four ranks' compute as RTX 6000s.
TEST_CASE("the built-in validation matrix: each mode says how its cases run") {
  const std::string path = builtin_validation_matrix_path();
  const ValidationRun short_run = load_validation_mode(path, "short").run;
  CHECK(short_run.player == "train");
  CHECK(short_run.steps == 10);
  CHECK(short_run.seq == 64);
  CHECK(short_run.batch == 8);
  CHECK(short_run.link_mbit == 1000);
  CHECK(short_run.nice == -10);
  CHECK(short_run.slice == "emulated-2site.yaml");
  const ValidationRun full_run = load_validation_mode(path, "full-size-short").run;
  CHECK(full_run.player == "replay");
  CHECK(full_run.steps == 2);
  CHECK(full_run.seq == 1024);
  CHECK(full_run.device_type == "GPU_RTX6000");
  CHECK(full_run.slice == "emulated-2site-4gpu.yaml");
  const ValidationMode overlap = load_validation_mode(path, "overlap");
  REQUIRE(overlap.plans.size() == 4);
  CHECK(overlap.plans[0] == "dp=2,bucket_mib=1,overlap=off");
  CHECK(overlap.plans[1] == "dp=2,bucket_mib=1,overlap=on");
}

TEST_CASE("a validation matrix is refused by file, place and value") {
  const test::TempDir dir("fabtrain-matrix");
  const auto refusal = [&](const std::string& mode_text) {
    const std::string path = (dir.path() / "m.yaml").string();
    std::ofstream(path) << "modes:\n  m:\n" << mode_text;
    return error_of([&] { load_validation_mode(path, "m"); });
  };
  const std::string lists = "    models: [gpt2-nano]\n    plans: [\"dp=2\"]\n";
  CHECK(refusal(lists + "    one_way_delays_ms: [0, -5]\n")
            .find("one_way_delays_ms: -5 is negative") != std::string::npos);
  CHECK(refusal(lists + "    one_way_delays_ms: [0]\n    pass: {error: median, max_error_pct: 5}\n")
            .find("modes.m.pass.error: 'median' is neither calibrated nor bench_only") !=
        std::string::npos);
  CHECK(refusal(lists + "    one_way_delays_ms: [0]\n    colour: red\n").find("colour") !=
        std::string::npos);
  CHECK(refusal("    models: [gpt2-nano]\n    plans: [\"dp=0\"]\n    one_way_delays_ms: [0]\n")
            .find("modes.m.plans") != std::string::npos);
  CHECK(refusal(lists).find("modes.m.one_way_delays_ms: expected a list of at least one") !=
        std::string::npos);
  const std::string cases = lists + "    one_way_delays_ms: [0]\n";
  CHECK(refusal(cases).find("modes.m.run: missing (expected a mapping)") != std::string::npos);
  const auto run = [&](const std::string& player, const std::string& nice,
                       const std::string& slice) {
    return refusal(cases + "    run: {player: " + player +
                   ", steps: 10, seq: 64, batch: 8, device_type: CPU_HOST, slice: " + slice +
                   ", link_mbit: 1000, nice: " + nice + "}\n");
  };
  CHECK(run("sideways", "0", "a.yaml")
            .find("modes.m.run.player: 'sideways' is neither train nor "
                  "replay") != std::string::npos);
  CHECK(run("train", "-40", "a.yaml").find("modes.m.run.nice: -40 is not a nice level") !=
        std::string::npos);
  CHECK(run("train", "0", "../a.yaml").find("must be a file name in platforms/data/slices/") !=
        std::string::npos);
}
