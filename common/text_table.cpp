#include "common/text_table.hpp"

#include <algorithm>
#include <cstdlib>

#include "common/error.hpp"
#include "common/text_wrap.hpp"

namespace fabtrain {
namespace {

// A cell as the lines of at most `width` columns it takes: whole when it fits; else broken after
// its commas or plus signs (a plan's text, a plan's GPUs: wrap_text's rule), and a piece still too
// long in `width`-wide parts.
std::vector<std::string> cell_lines(const std::string& cell, size_t width) {
  if (cell.size() <= width || width == 0) return {cell};
  std::vector<std::string> out;
  const std::string wrapped = wrap_text(cell, int(width), 0);
  for (size_t start = 0; start <= wrapped.size();) {
    size_t end = wrapped.find('\n', start);
    if (end == std::string::npos) end = wrapped.size();
    for (size_t at = start; at < end; at += width)
      out.push_back(wrapped.substr(at, std::min(width, end - at)));
    start = end + 1;
  }
  return out;
}

}  // namespace

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
    // Then the shrinkable columns, the widest first, each to no less than its header or 8.
    auto least = [&](size_t c) { return std::max<size_t>(columns_[c].header.size(), 8); };
    while (total() > size_t(width)) {
      int widest = -1;
      for (size_t c = 0; c < n; ++c)
        if (shown[c] && columns_[c].shrink && widths[c] > least(c) &&
            (widest < 0 || widths[c] > widths[widest]))
          widest = int(c);
      if (widest < 0) break;
      --widths[widest];
    }
  }
  // One row as its lines: a cell wider than its column (only the shrinkable one can be) goes on
  // over the lines below, the other columns blank there.
  auto lines = [&](const std::vector<std::string>& cells) {
    std::vector<std::vector<std::string>> parts(n);
    size_t count = 1;
    for (size_t c = 0; c < n; ++c) {
      parts[c] = shown[c] ? cell_lines(cells[c], widths[c]) : std::vector<std::string>{""};
      count = std::max(count, parts[c].size());
    }
    std::string text;
    for (size_t l = 0; l < count; ++l) {
      std::string s(size_t(indent), ' ');
      bool first = true;
      for (size_t c = 0; c < n; ++c) {
        if (!shown[c]) continue;
        const std::string cell = l < parts[c].size() ? parts[c][l] : "";
        const std::string pad(widths[c] - std::min(widths[c], cell.size()), ' ');
        s += (first ? "" : "  ") + (columns_[c].right ? pad + cell : cell + pad);
        first = false;
      }
      while (!s.empty() && s.back() == ' ') s.pop_back();
      text += s + "\n";
    }
    return text;
  };
  std::vector<std::string> headers;
  for (const auto& column : columns_) headers.push_back(column.header);
  out.text += lines(headers);
  for (const auto& row : rows_) out.text += lines(row);
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
