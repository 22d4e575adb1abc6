// Numeric command-line options read strictly, for every subcommand at once: CLI11 alone reads
// "010" as octal 8, "0x10" as hex and accepts "nan" and "inf". Integer options take decimal digits
// only (and no minus sign for an unsigned one, which CLI11 would wrap to 2^64 - 1); real options
// must be finite (NaN and infinities are refused by name).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "common/error.hpp"
#include "common/strict_number.hpp"

namespace fabtrain {

inline void make_numbers_strict(CLI::App& app) {
  // A validator from a strict reader: its fabtrain::Error message is CLI11's complaint.
  auto validator = [](auto read) {
    return CLI::Validator(
        [read](std::string& text) -> std::string {
          try {
            read(text, "value");
          } catch (const Error& e) {
            return std::string(e.what()).substr(std::string_view("value: ").size());
          }
          return "";
        },
        "");
  };
  const CLI::Validator integer =
      validator([](const std::string& t, const char* w) { strict_integer(t, w); });
  const CLI::Validator natural = validator([](const std::string& t, const char* w) {
    if (strict_integer(t, w) < 0) fail("{}: {} is negative; this option counts from 0", w, t);
  });
  const CLI::Validator finite =
      validator([](const std::string& t, const char* w) { strict_finite(t, w); });
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    auto is = [&](const char* name) { return type.rfind(name, 0) == 0; };  // "INT", "INT:..."
    if (is("UINT"))
      option->check(natural);
    else if (is("INT"))
      option->check(integer);
    else if (is("FLOAT"))
      option->check(finite);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    make_numbers_strict(*sub);
}

}  // namespace fabtrain
