// Fields of a JSON document read strictly, each failure a fabtrain::Error that names the file,
// where in it ("line 3 instructions[2]", "gemm[0]") and the field: unknown keys, missing fields,
// wrong types, numbers below their minimum, counts beyond fabtrain's limits. Shared by the run
// record's reader (plan/run_record_format.hpp) and calibration's bench reader.
#pragma once
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/limits.hpp"

namespace fabtrain::json_fields {

void reject_unknown(const nlohmann::json& node, const std::set<std::string>& known,
                    const std::string& where, const std::string& file);
const nlohmann::json& field(const nlohmann::json& node, const std::string& key,
                            const std::string& where, const std::string& file);
// A finite number of at least min.
double number(const nlohmann::json& node, const std::string& key, const std::string& where,
              const std::string& file, double min = 0);
// A whole number in [min, max] (a float form such as 1e300 is refused, never cast).
int integer(const nlohmann::json& node, const std::string& key, const std::string& where,
            const std::string& file, int min, int max);
// A count that fabtrain bounds (world, batch, seq): at least 1 and within its limit.
int bounded(const nlohmann::json& node, const std::string& key, const std::string& where,
            const std::string& file, const Limit& limit);
std::string text(const nlohmann::json& node, const std::string& key, const std::string& where,
                 const std::string& file);
const nlohmann::json& array(const nlohmann::json& node, const std::string& key,
                            const std::string& where, const std::string& file);

}  // namespace fabtrain::json_fields
