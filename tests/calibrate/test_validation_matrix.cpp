// The validation matrix as the emulated-link validation reads it: every mode of the built-in
// file loads with the lists the script loops over and the limits its checking modes judge;
// what the file must not say is refused by file, place and value.
#include <doctest/doctest.h>

#include <fstream>

#include "calibrate/validation_matrix.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::error_of;

TEST_CASE("the built-in validation matrix: four modes, limits where the script judges") {
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
}
