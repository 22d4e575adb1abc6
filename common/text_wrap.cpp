#include "common/text_wrap.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

namespace fabtrain {

std::string wrap_text(const std::string& text, int width, int indent) {
  if (width <= 0) return text;
  std::istringstream words(text);
  std::string word, out, line;
  const std::string pad(static_cast<std::size_t>(indent > 0 ? indent : 0), ' ');
  // (text, glued): a glued piece continues the word before it, without a space, on one line.
  std::vector<std::pair<std::string, bool>> pieces;
  while (words >> word) {
    // A word longer than a line (a whole plan, its GPUs) breaks after its commas and plus signs;
    // other words stay whole.
    const std::size_t room = std::size_t(std::max(width - indent, 1));
    if (word.size() <= room || word.find_first_of(",+") == std::string::npos) {
      pieces.push_back({word, false});
      continue;
    }
    std::string piece;
    bool glued = false;
    for (char c : word) {
      piece += c;
      if ((c == ',' || c == '+') && piece.size() >= room / 2) {
        pieces.push_back({piece, glued});
        piece.clear(), glued = true;
      }
    }
    if (!piece.empty()) pieces.push_back({piece, glued});
  }
  for (const auto& [piece, glued] : pieces) {
    const std::size_t gap = line.empty() || line == pad || glued ? 0 : 1;
    if (!line.empty() && line != pad &&
        line.size() + gap + piece.size() > static_cast<std::size_t>(width)) {
      out += line + "\n";
      line = pad;
    }
    line += (line.empty() || line == pad || glued ? "" : " ") + piece;
  }
  return out + line;
}

namespace {
// Where the value of a "label    value" line starts (a label of at most 24 columns, then two
// spaces or more), 0 when the line is not one.
std::size_t labelled_value_column(const std::string& line, std::size_t indent) {
  const std::size_t gap = line.find("  ", indent);
  if (gap == std::string::npos || gap == indent || gap - indent > 24) return 0;
  const std::size_t value = line.find_first_not_of(' ', gap);
  return value == std::string::npos ? 0 : value;
}
}  // namespace

std::string fit_lines(const std::string& text, int width) {
  if (width <= 0) return text;
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool newline = end != std::string::npos;
    if (!newline) end = text.size();
    const std::string line = text.substr(start, end - start);
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    const std::size_t value = labelled_value_column(line, indent);
    if (int(line.size()) <= width || indent == line.size()) {
      out += line;
    } else if (value > 0 && int(value) < width / 2) {
      // "label    value": the label and its padding kept, the value wrapped under itself.
      std::string body = wrap_text(line.substr(value), width - int(value), 0);
      for (std::size_t at = body.find('\n'); at != std::string::npos; at = body.find('\n', at + 1))
        body.insert(at + 1, value, ' ');
      out += line.substr(0, value) + body;
    } else {
      // The body's lines fit width - indent; its continuation lines carry indent + 2 spaces
      // themselves, so they print from column 0 within the width.
      out += std::string(indent, ' ') +
             wrap_text(line.substr(indent), width - int(indent), int(indent) + 2);
    }
    if (newline) out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace fabtrain
