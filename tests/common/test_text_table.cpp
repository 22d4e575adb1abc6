// Tables fit a width (droppable columns first, then the shrinkable one, whose cells wrap, never
// cut), keep every column at one offset however long a cell is, and the unit rules people read.
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>

#include "common/human_units.hpp"
#include "common/text_table.hpp"

using namespace fabtrain;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TextTable sample(const std::string& long_plan) {
  TextTable t({{"#", true},
               {"plan", false, 0, true},
               {"GPUs", false},
               {"to train", true},
               {"step s", true, 2},
               {"TFLOP/s", true, 3}});
  t.add_row({"1", "dp=2,tp=1,pp=1,mb=4", "2@UTAH", "1.41 h", "2.562", "7.75"});
  t.add_row({"2", long_plan, "2@UTAH+2@AMST", "12.5 h", "30.100", "0.41"});
  return t;
}

}  // namespace

TEST_CASE("a long cell widens its column: the columns after it start at one offset on every line") {
  const std::string long_plan = "dp=2,tp=1,pp=2,mb=8,schedule=gpipe,recompute=on,layers=10:14";
  const auto lines = lines_of(sample(long_plan).render(0).text);
  REQUIRE(lines.size() == 3);
  const size_t gpus = lines[0].find("GPUs");
  CHECK(lines[1].find("2@UTAH") == gpus);
  CHECK(lines[2].find("2@UTAH+2@AMST") == gpus);
  // right-aligned numbers end where their header ends
  const size_t end = lines[0].find("to train") + std::string("to train").size();
  CHECK(lines[1].find("1.41 h") + 6 == end);
  CHECK(lines[2].find("12.5 h") + 6 == end);
}

TEST_CASE(
    "a table fits its width: droppable columns go first, highest rank first, then the plan "
    "wraps") {
  const std::string long_plan = "dp=2,tp=1,pp=2,mb=8,schedule=gpipe,recompute=on,layers=10:14";
  const TextTable t = sample(long_plan);
  const RenderedTable all = t.render(0);
  const size_t full = lines_of(all.text)[2].size();
  CHECK(all.dropped.empty());
  // Just too narrow for everything: TFLOP/s (rank 3) goes, step s (rank 2) stays.
  const RenderedTable one = t.render(int(full) - 1);
  REQUIRE(one.dropped.size() == 1);
  CHECK(one.dropped[0] == "TFLOP/s");
  for (const auto& line : lines_of(one.text)) CHECK(line.size() <= full - 1);
  // Narrower than the columns that always show: the long plan goes on over the row's next lines,
  // broken after its commas, every part of it shown and nothing cut.
  const RenderedTable narrow = t.render(40);
  CHECK(narrow.dropped.size() == 2);
  const auto lines = lines_of(narrow.text);
  for (const auto& line : lines) CHECK(line.size() <= 40);
  CHECK(narrow.text.find("~") == std::string::npos);
  const size_t plan = lines[0].find("plan");
  size_t row2 = 0;  // the line where row 2 starts: its "#" cell
  while (row2 < lines.size() && lines[row2].rfind("2  ", 0) != 0) ++row2;
  REQUIRE(row2 + 1 < lines.size());  // row 2 goes on below
  std::string joined;                // the plan column of row 2, its lines put back together
  for (size_t l = row2; l < lines.size(); ++l) {
    if (l > row2) CHECK(lines[l].find_first_not_of(' ') == plan);  // only the plan goes on
    std::string part = lines[l].substr(plan);
    joined += part.substr(0, part.find(' '));
  }
  CHECK(joined == long_plan);
  CHECK(lines[row2].find("2@UTAH+2@AMST") != std::string::npos);  // on the row's first line
}

TEST_CASE("two shrinkable columns: the widest narrows first, GPUs break after their plus signs") {
  const std::string where = "1xRTX6000@UTAH+1xRTX6000@AMST+1xTeslaT4@GPN";
  const std::string plan = "dp=3,tp=1,pp=1,mb=1";
  TextTable t({{"GPUs", true},
               {"where", false, 0, true},
               {"best plan", false, 0, true},
               {"to train", true},
               {"", false}});
  t.add_row({"3", where, plan, "0.57 h", "<- chosen"});
  const auto lines = lines_of(t.render(70).text);
  for (const auto& line : lines) CHECK(line.size() <= 70);
  REQUIRE(lines.size() >= 3);
  CHECK(lines[1].find(plan) != std::string::npos);  // the plan kept whole: "where" was wider
  CHECK(lines[1].find("<- chosen") != std::string::npos);
  const size_t column = lines[0].find("where");
  std::string joined;  // the where column, its lines put back together
  for (size_t l = 1; l < lines.size(); ++l) {
    const std::string part = lines[l].substr(column);
    joined += part.substr(0, part.find(' '));
    if (l + 1 < lines.size()) CHECK(joined.back() == '+');  // broken after a plus sign
  }
  CHECK(joined == where);
}

TEST_CASE("the default width is 100, or $COLUMNS when it is a number of at least 40") {
  ::unsetenv("COLUMNS");
  CHECK(table_width(false) == 100);
  CHECK(table_width(true) == 0);
  ::setenv("COLUMNS", "132", 1);
  CHECK(table_width(false) == 132);
  ::setenv("COLUMNS", "12", 1);
  CHECK(table_width(false) == 100);
  ::setenv("COLUMNS", "wide", 1);
  CHECK(table_width(false) == 100);
  ::unsetenv("COLUMNS");
}

TEST_CASE("one unit rule: hours below 100 h, then days; MiB below 1 GiB, then GiB") {
  CHECK(format_train_time(0) == "-");
  CHECK(format_train_time(1800) == "0.50 h");
  CHECK(format_train_time(3600 * 37.5) == "37.5 h");
  CHECK(format_train_time(3600 * 99.9) == "99.9 h");
  CHECK(format_train_time(3600 * 100) == "4.2 d");
  CHECK(format_train_time(86400 * 30) == "30.0 d");
  CHECK(format_gpu_hours(0.853) == "0.85");
  CHECK(format_gpu_hours(123.45) == "123.5");
  CHECK(format_bytes(640.0 * 1024 * 1024) == "640 MiB");
  CHECK(format_bytes(15.7 * 1024 * 1024 * 1024) == "15.7 GiB");
  CHECK(format_bytes_of(15.7 * 1024 * 1024 * 1024, 24.0 * 1024 * 1024 * 1024) == "15.7/24.0 GiB");
  CHECK(format_bytes_of(300.0 * 1024 * 1024, 512.0 * 1024 * 1024) == "300/512 MiB");
}
