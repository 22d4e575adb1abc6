// Numbers read from text (YAML scalars, plan keys, record names) strictly: an integer is decimal
// digits with an optional minus sign (no octal "010", hex, fraction, exponent or wrap-around), a
// real number is finite (NaN and infinities are refused by name). `what` names the field in the
// message ("slice.yaml: vms[0].gpus").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace fabtrain {

std::int64_t strict_integer(std::string_view text, std::string_view what);
// strict_integer within [min, max], else "what: N is out of range [min, max]".
int strict_int(std::string_view text, std::string_view what, int min, int max);
double strict_finite(std::string_view text, std::string_view what);
// Refuses NaN and infinities of a number already read (JSON, arithmetic).
double require_finite(double value, std::string_view what);

}  // namespace fabtrain
