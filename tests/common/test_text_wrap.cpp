// Prose wrapped to a width keeps every word, indents the lines after the first, and leaves a word
// longer than the width whole.
#include <doctest/doctest.h>

#include <sstream>

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
}
