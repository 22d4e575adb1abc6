// A text table that fits a width: each column as wide as its widest cell (so a long plan string
// widens its column instead of shifting the ones after it); when the whole is wider than the
// width, the columns marked droppable go first (highest drop rank first), then the shrinkable
// columns are narrowed, the widest first, and a cell wider than its column goes on over the row's
// next lines (a plan's text breaks after its commas, its GPUs after their plus signs), so no cell
// is ever cut: rows that differ still read differently.
// --wide shows everything on one line per row.
#pragma once
#include <string>
#include <vector>

namespace fabtrain {

struct TableColumn {
  std::string header;
  bool right = false;   // right-aligned (numbers)
  int drop = 0;         // 0: always shown; otherwise dropped, highest first, to fit the width
  bool shrink = false;  // may be narrowed to fit, its cells wrapped
};

struct RenderedTable {
  std::string text;                  // header line, then one line per row
  std::vector<std::string> dropped;  // headers of the columns left out
};

class TextTable {
 public:
  explicit TextTable(std::vector<TableColumn> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells);  // one cell per column
  // width <= 0: no limit (every column, uncut). indent: spaces before each line.
  RenderedTable render(int width, int indent = 0) const;

 private:
  std::vector<TableColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// The width tables fit by default: $COLUMNS when it is a number of at least 40, else 100;
// 0 (no limit) when wide.
int table_width(bool wide);

}  // namespace fabtrain
