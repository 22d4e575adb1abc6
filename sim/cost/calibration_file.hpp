// Writing a Calibration as the YAML that load_calibration (calibration.hpp, next door: the
// reader and the writer of the file sit together) reads back (every key optional; only the
// fields that are set are written), with comment lines on top saying where the numbers came from.
// Not here: fitting it (calibrate/).
#pragma once
#include <string>
#include <vector>

#include "sim/cost/calibration.hpp"

namespace fabtrain {

std::string calibration_yaml(const Calibration& cal, const std::vector<std::string>& comments);
void write_calibration(const Calibration& cal, const std::vector<std::string>& comments,
                       const std::string& path);

}  // namespace fabtrain
