// Prose that fits a terminal: words filled into lines of at most `width` columns, every line
// after the first indented by `indent` spaces. A word longer than a line stays whole on a line
// of its own (a path or a command is not broken), unless it is a list: then it breaks after
// commas or plus signs (a plan's text, its GPUs "2@UTAH+2@AMST"). width <= 0: one line.
#pragma once
#include <string>

namespace fabtrain {

std::string wrap_text(const std::string& text, int width, int indent = 2);
// Each line of `text` wrapped to `width`, keeping its own indent, its continuation lines indented
// two more; a "label    value" line (a short label padded by two spaces or more) keeps its padding
// and wraps its value under itself; empty lines and the final newline kept. width <= 0: the text
// as is.
std::string fit_lines(const std::string& text, int width);

}  // namespace fabtrain
