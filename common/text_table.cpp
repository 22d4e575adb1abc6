#include "common/text_table.hpp"

#include <algorithm>
#include <cstdlib>

#include "common/error.hpp"

namespace fabtrain {

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    fail("TextTable: a row of {} cells for {} columns", cells.size(), columns_.size());
  rows_.push_back(std::move(cells));
}

RenderedTable TextTable::render(int width, int indent) const {
  const size_t n = columns_.size();
  std::vector<size_t> widths(n);
  for (size_t c = 0; c < n; ++c) {
    widths[c] = columns_[c].header.size();
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  std::vector<bool> shown(n, true);
  auto total = [&] {
    size_t sum = size_t(indent), count = 0;
    for (size_t c = 0; c < n; ++c)
      if (shown[c]) sum += widths[c], ++count;
    return sum + (count > 0 ? 2 * (count - 1) : 0);
  };
  RenderedTable out;
  if (width > 0) {
    while (total() > size_t(width)) {
      int victim = -1;
      for (size_t c = 0; c < n; ++c)
        if (shown[c] && columns_[c].drop > 0 &&
            (victim < 0 || columns_[c].drop > columns_[victim].drop))
          victim = int(c);
      if (victim < 0) break;
      shown[victim] = false;
      out.dropped.push_back(columns_[victim].header);
    }
    for (size_t c = 0; c < n && total() > size_t(width); ++c)
      if (shown[c] && columns_[c].shrink) {
        const size_t least = std::max<size_t>(columns_[c].header.size(), 8);
        widths[c] = std::max(least, widths[c] - std::min(widths[c], total() - size_t(width)));
      }
  }
  auto line = [&](auto cell_of) {
    std::string s(size_t(indent), ' ');
    bool first = true;
    for (size_t c = 0; c < n; ++c) {
      if (!shown[c]) continue;
      std::string cell = cell_of(c);
      if (cell.size() > widths[c]) cell = cell.substr(0, widths[c] - 1) + "~";
      const std::string pad(widths[c] - cell.size(), ' ');
      s += (first ? "" : "  ") + (columns_[c].right ? pad + cell : cell + pad);
      first = false;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  out.text += line([&](size_t c) { return columns_[c].header; });
  for (const auto& row : rows_) out.text += line([&](size_t c) { return row[c]; });
  return out;
}

int table_width(bool wide) {
  if (wide) return 0;
  if (const char* env = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 40) return int(v);
  }
  return 100;
}

}  // namespace fabtrain
