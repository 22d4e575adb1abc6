// Prose wrapped to a width keeps every word, indents the lines after the first, and leaves a word
// longer than the width whole.
#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include "common/text_wrap.hpp"

using namespace fabtrain;

TEST_CASE("wrapped prose fits the width, keeps every word and indents the lines after the first") {
  const std::string text =
      "the launch line names the data-plane interface of every network the ranks cross, "
      "from the slice file or FABRIC's defaults";
  const std::string wrapped = wrap_text(text, 30, 4);
  std::istringstream in(wrapped);
  std::string line, rejoined;
  int n = 0;
  for (; std::getline(in, line); ++n) {
    CHECK(line.size() <= 30);
    if (n > 0) CHECK(line.rfind("    ", 0) == 0);
    std::istringstream words(line);
    for (std::string w; words >> w;) rejoined += (rejoined.empty() ? "" : " ") + w;
  }
  CHECK(n > 3);
  CHECK(rejoined == text);
  CHECK(wrap_text(text, 0) == text);
  // A word longer than the width is not broken.
  CHECK(wrap_text("a /very/long/path/that/does/not/fit b", 10, 2) ==
        "a\n  /very/long/path/that/does/not/fit\n  b");
  // A list longer than a line (a plan) breaks after commas, with no space added inside it.
  const std::string plan = "dp=2,tp=1,pp=3,mb=12,schedule=1f1b,layers=10:9:5,devices=0:1:2:3:4:5";
  const std::string wrapped_plan = wrap_text("best: " + plan + " wins", 40, 2);
  CHECK(wrapped_plan.find(", ") == std::string::npos);
  std::istringstream plan_lines(wrapped_plan);
  std::string all;
  for (std::string l; std::getline(plan_lines, l);) {
    CHECK(l.size() <= 40);
    all += l.substr(l.find_first_not_of(' '));
    if (all.back() != ',') all += ' ';
  }
  CHECK(all == "best: " + plan + " wins ");
}

TEST_CASE("fitted lines keep their own indent, wrap only what is too wide, keep empty lines") {
  const std::string text =
      "short line\n\n  an indented line that is much too wide for the width we give it here\n"
      "last";
  const std::string fitted = fit_lines(text, 30);
  std::istringstream in(fitted);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() >= 5);
  CHECK(lines[0] == "short line");
  CHECK(lines[1].empty());
  CHECK(lines[2].rfind("  an indented", 0) == 0);
  CHECK(lines[3].rfind("    ", 0) == 0);  // its continuation: two more than its own indent
  CHECK(lines.back() == "last");
  for (const auto& l : lines) CHECK(l.size() <= 30);
  CHECK(fit_lines("a\n", 30) == "a\n");
  CHECK(fit_lines(text, 0) == text);
}

TEST_CASE("a labelled line keeps its padding and wraps its value under itself") {
  const std::string fitted =
      fit_lines("batch        16 sequences of 128 tokens (default: 8 per GPU of the plan)\n", 40);
  std::istringstream in(fitted);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() >= 2);
  CHECK(lines[0].rfind("batch        16 ", 0) == 0);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    CHECK(lines[i].rfind(std::string(13, ' '), 0) == 0);
    CHECK(lines[i][13] != ' ');
  }
  for (const auto& l : lines) CHECK(l.size() <= 40);
}
