// The strict YAML tree: what it keeps (kinds, text, lines) and what it refuses, by line and place.
#include <doctest/doctest.h>

#include <chrono>

#include "common/yaml_tree.hpp"
#include "tests/test_support.hpp"

namespace fabtrain {
using test::error_of;

namespace {
YamlNode parse(const std::string& text) { return parse_yaml(text, "f.yaml", "test"); }
std::string refusal(const std::string& text) {
  return error_of([&] { parse(text); });
}
}  // namespace

TEST_CASE("YAML tree: mappings in file order, sequences, scalars, nulls and lines") {
  const YamlNode root = parse(
      "name: a\n"
      "vms:\n"
      "  - {gpus: 2, host: '~'}\n"
      "  - [x, \"y z\"]\n"
      "empty:\n"
      "tilde: ~\n");
  REQUIRE(root.is_mapping());
  REQUIRE(root.size() == 4);
  CHECK(root.entries()[0].first == "name");
  CHECK(root.entries()[3].first == "tilde");
  CHECK(root["name"].text() == "a");
  CHECK(root["vms"].is_sequence());
  CHECK(root["vms"].line() == 3);
  CHECK(root["vms"][0]["gpus"].text() == "2");
  CHECK(root["vms"][0]["host"].is_scalar());  // quoted: text, not null
  CHECK(root["vms"][0]["host"].text() == "~");
  CHECK(root["vms"][1][1].text() == "y z");
  CHECK(root["vms"][1].line() == 4);
  CHECK(root["empty"].is_null());
  CHECK(root["tilde"].is_null());
  CHECK(bool(root["tilde"]));
  CHECK_FALSE(bool(root["absent"]));
  CHECK_FALSE(bool(root["name"]["below a scalar"]));
  CHECK(parse("").is_null());
  CHECK(parse("# only a comment\n").is_null());
}

TEST_CASE("YAML tree: a key given twice is refused with its place and both lines") {
  CHECK(refusal("a: 1\nnets:\n  - {rtt_ms: 5, rtt_ms: 500}\n") ==
        "f.yaml: line 3: nets[0].rtt_ms: duplicate key (it appears twice in one mapping, first on "
        "line 3)");
  CHECK(refusal("a: 1\nb: 2\na: 3\n").find("line 3: a: duplicate key") != std::string::npos);
  CHECK(refusal("a: 1\nb: 2\na: 3\n").find("first on line 1") != std::string::npos);
  // The same key in two different mappings is fine.
  CHECK(parse("x: {a: 1}\ny: {a: 2}\n")["y"]["a"].text() == "2");
}

TEST_CASE("YAML tree: second documents, aliases, odd keys and deep nesting are refused") {
  CHECK(refusal("a: 1\n---\nb: 2\n") ==
        "f.yaml: holds 2 YAML documents (separated by ---); a test file is one");
  CHECK(refusal("a: &x 1\nb: *x\n") ==
        "f.yaml: line 2: b: an alias (*x); fabtrain's files write every value out");
  CHECK(refusal("{[1]: 2}\n").find("line 1: top level: a key must be a plain name, found a list") !=
        std::string::npos);
  CHECK(refusal("~: 2\n").find("a key must be a plain name, found nothing") != std::string::npos);
  const std::string deep =
      std::string(kMaxYamlDepth + 1, '[') + std::string(kMaxYamlDepth + 1, ']');
  CHECK(refusal(deep).find("nested more than 64 levels deep") != std::string::npos);
  CHECK(parse(std::string(kMaxYamlDepth, '[') + std::string(kMaxYamlDepth, ']')).is_sequence());
}

TEST_CASE(
    "YAML tree: syntax errors name the line and column, bytes that are not UTF-8 their offset") {
  CHECK(refusal("a: [1, 2\nb: 3\n").find("f.yaml: not valid YAML: line 3, column 1: ") == 0);
  CHECK(refusal("a: 1\n  b: 2\n").find("f.yaml: not valid YAML: line 1, column 4: ") == 0);
  CHECK(refusal("a: \xff\n") ==
        "f.yaml: byte 3 (0xff) is not UTF-8 text; a test file is YAML text");
}

// The inputs on which the former parser never returned, and unclosed brackets by the hundred
// thousand: each is refused at once.
TEST_CASE("YAML tree: malformed text is refused in bounded time") {
  std::string dashes;
  for (int i = 0; i < 10000; ++i) dashes += "- ";
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& text :
       {std::string("a: {b: [c, {d: e"), std::string("{{{{{{{{,,,,]]]]"), std::string(100000, '['),
        std::string(100000, '{'), dashes + "x", "key: \"unterminated\n" + std::string(10000, 'x')})
    CHECK_THROWS_AS(parse(text), Error);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

}  // namespace fabtrain
