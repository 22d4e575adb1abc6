// Help of both programs that fits the terminal ($COLUMNS, else 100): each option's and
// subcommand's description filled into the column after its name, descriptions of commands
// filled to the width. CLI11 prints each description on one line, however long.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common/text_table.hpp"
#include "common/text_wrap.hpp"

namespace fabtrain {

class FittingHelp : public CLI::Formatter {
 public:
  explicit FittingHelp(int width) : width_(width) {}

  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    return entry(make_option_name(opt, is_positional) + make_option_opts(opt),
                 make_option_desc(opt));
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    return entry(sub->get_display_name(true), sub->get_description());
  }
  std::string make_description(const CLI::App* app) const override {
    return fit_lines(CLI::Formatter::make_description(app), width_);
  }
  std::string make_footer(const CLI::App* app) const override {
    return fit_lines(CLI::Formatter::make_footer(app), width_);
  }

 private:
  // "  name      description", the description filled under itself from the column after the
  // names, on the next line where the name reaches that column.
  std::string entry(const std::string& name, const std::string& description) const {
    const std::size_t column = get_column_width();
    std::string out = "  " + name;
    if (description.empty()) return out + "\n";
    out += out.size() >= column ? "\n" + std::string(column, ' ')
                                : std::string(column - out.size(), ' ');
    const int room = width_ - int(column);
    std::string body = room >= 20 ? wrap_text(description, room, 0) : description;
    for (std::size_t at = body.find('\n'); at != std::string::npos; at = body.find('\n', at + 1))
      body.insert(at + 1, column, ' ');
    return out + body + "\n";
  }

  int width_;
};

// Gives `app` and the subcommands it inherits to the help that fits $COLUMNS (else 100).
inline void fit_help_to_terminal(CLI::App& app) {
  app.formatter(std::make_shared<FittingHelp>(table_width(false)));
}

}  // namespace fabtrain
