#include "common/text_wrap.hpp"

#include <sstream>

namespace fabtrain {

std::string wrap_text(const std::string& text, int width, int indent) {
  if (width <= 0) return text;
  std::istringstream words(text);
  std::string word, out, line;
  const std::string pad(static_cast<std::size_t>(indent > 0 ? indent : 0), ' ');
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > static_cast<std::size_t>(width)) {
      out += line + "\n";
      line = pad;
    }
    line += (line.empty() || line == pad ? "" : " ") + word;
  }
  return out + line;
}

}  // namespace fabtrain
