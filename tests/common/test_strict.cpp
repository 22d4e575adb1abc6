// Strict numbers, strict JSON and the limits' message.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "common/limits.hpp"
#include "common/strict_json.hpp"
#include "common/strict_number.hpp"
#include "tests/test_support.hpp"

namespace fabtrain {
using test::error_of;

TEST_CASE("integers are decimal: no octal, hex, fraction or wrap-around") {
  CHECK(strict_integer("8", "x") == 8);
  CHECK(strict_integer("-12", "x") == -12);
  CHECK(strict_integer("0", "x") == 0);
  CHECK(error_of([] { strict_integer("010", "vms[0].gpus"); }) ==
        "vms[0].gpus: '010' has a leading zero (octal is not read; write it without)");
  CHECK(error_of([] { strict_integer("0x10", "g"); }).find("not an integer") != std::string::npos);
  CHECK(error_of([] { strict_integer("1e3", "g"); }).find("not an integer") != std::string::npos);
  CHECK(error_of([] { strict_integer("2.0", "g"); }).find("not an integer") != std::string::npos);
  CHECK(error_of([] { strict_integer("", "g"); }).find("not an integer") != std::string::npos);
  CHECK(error_of([] { strict_integer("99999999999999999999", "g"); }).find("does not fit") !=
        std::string::npos);
  // 2^32 + 2 once became a 2-layer model
  CHECK(strict_integer("4294967298", "n") == 4294967298LL);
  CHECK(error_of([] { strict_int("4294967298", "n_layer", 1, 1024); }) ==
        "n_layer: 4294967298 is out of range [1, 1024]");
}

TEST_CASE("real numbers are finite: NaN and infinities are refused by name") {
  CHECK(strict_finite("103", "x") == 103);
  CHECK(strict_finite("1.5e-3", "x") == doctest::Approx(1.5e-3));
  CHECK(strict_finite("+2", "x") == 2);
  CHECK(strict_finite(".5", "x") == 0.5);
  for (const char* nan : {".nan", ".NaN", "nan", "NAN"})
    CHECK(error_of([&] { strict_finite(nan, "rtt_ms"); }).find("is NaN") != std::string::npos);
  for (const char* inf : {".inf", "-.inf", "+.Inf", "inf", "-inf", "infinity"})
    CHECK(error_of([&] { strict_finite(inf, "rtt_ms"); }).find("is infinite") != std::string::npos);
  CHECK(error_of([] { strict_finite("1e999", "rtt_ms"); }).find("out of the range") !=
        std::string::npos);
  CHECK(error_of([] { strict_finite("12ms", "rtt_ms"); }) == "rtt_ms: '12ms' is not a number");
  CHECK(error_of([] { strict_finite("0x1p3", "x"); }).find("not a number") != std::string::npos);
  CHECK(error_of([] { require_finite(std::nan(""), "loss"); }) == "loss: NaN is not a number");
}

TEST_CASE("JSON nested deeper than the limit is refused with the line, before any parser") {
  const auto nested = [](std::int64_t depth) {
    return std::string(std::size_t(depth), '[') + std::string(std::size_t(depth), ']');
  };
  CHECK(parse_json_strict(nested(limits::json_depth.max), "f.json").is_array());
  CHECK(error_of([&] { parse_json_strict(nested(100'000), "f.json"); }) ==
        fmt::format("f.json: the JSON nesting depth is {}; fabtrain handles at most {} ({})",
                    limits::json_depth.max + 1, limits::json_depth.max, limits::json_depth.why));
  const std::string lines = "{\"a\": \"[[[\\\"[[\",\n \"b\":\n" + nested(100'000) + "}";
  CHECK(error_of([&] {
          parse_json_strict(lines, "slice.json");
        }).find("slice.json: the JSON nesting depth (line 3) is") == 0);
  std::istringstream in(nested(100'000));
  CHECK(error_of([&] {
          parse_json_strict(in, "model file c.json");
        }).find("fabtrain handles at most") != std::string::npos);
}

TEST_CASE("a JSON key given twice is an error, at any depth") {
  CHECK(parse_json_strict(std::string(R"({"a": 1, "b": {"a": 2}})"), "f.json")["b"]["a"] == 2);
  CHECK(error_of([] {
          parse_json_strict(std::string(R"({"n_layer": 2, "n_layer": 4})"), "config.json");
        }) == "config.json: key 'n_layer' appears twice in one object");
  CHECK(error_of([] {
          parse_json_strict(std::string(R"([{"x": {"y": 1, "y": 1}}])"), "f");
        }).find("'y' appears twice") != std::string::npos);
  CHECK(error_of([] {
          parse_json_strict(std::string("{"), "f.json");
        }).find("f.json: not valid JSON") == 0);
}

TEST_CASE("JSON integers are whole and in range, never cast from a float") {
  using nlohmann::json;
  CHECK(json_integer(json::parse("3"), "rank", 0, 7) == 3);
  CHECK(error_of([] { json_integer(json::parse("1e300"), "rank", 0, 7); }) ==
        "rank: 1e+300 is not an integer");
  CHECK(error_of([] { json_integer(json::parse("3000000000"), "rank", 0, 7); }) ==
        "rank: 3000000000 is out of range [0, 7]");
  CHECK(error_of([] {
          json_integer(json::parse("18446744073709551615"), "rank", 0, 7);
        }).find("does not fit") != std::string::npos);
  CHECK(error_of([] { json_integer(json::parse("-1"), "rank", 0, 7); }) ==
        "rank: -1 is out of range [0, 7]");
}

TEST_CASE("a limit's message names the value, the limit and why") {
  check_limit("layers", limits::layers.max, limits::layers);  // at the limit: fine
  CHECK(error_of([] { check_limit("model x: n_layer", 1000000, limits::layers); }) ==
        fmt::format("model x: n_layer is 1000000; fabtrain handles at most {} ({})",
                    limits::layers.max, limits::layers.why));
}

}  // namespace fabtrain
