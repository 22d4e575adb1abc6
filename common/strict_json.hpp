// JSON read strictly: a key repeated in one object is an error (nlohmann would keep the last), and
// integers are whole JSON integers within range (no 1e300 or 3e9 cast to int).
#pragma once
#include <cstdint>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace fabtrain {

// Parses one JSON document; a syntax error, a duplicate key, a document nested deeper than
// limits::json_depth or larger than limits::json_file_bytes becomes fabtrain::Error naming `what`.
nlohmann::json parse_json_strict(std::istream& in, std::string_view what);
nlohmann::json parse_json_strict(const std::string& text, std::string_view what);

// Refuses text whose brackets nest deeper than limits::json_depth, naming `what`, the line (when
// the text has several) and the limit; reads nothing else, so it runs before any parser.
void check_json_depth(std::string_view text, std::string_view what);

// The value as an integer in [min, max]; a fraction, a float form or a value out of range fails,
// naming `what`.
std::int64_t json_integer(const nlohmann::json& value, std::string_view what, std::int64_t min,
                          std::int64_t max);

}  // namespace fabtrain
