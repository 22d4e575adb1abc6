// Writing a Calibration as the YAML that sim/cost/calibration.hpp's load_calibration reads (every
// key optional; only the fields that are set are written), with comment lines on top saying
// where the numbers came from.
// Not here: reading it (sim/calibration.cpp) or fitting it.
#pragma once
#include <string>
#include <vector>

#include "sim/cost/calibration.hpp"

namespace fabtrain::calib {

std::string calibration_yaml(const Calibration& cal, const std::vector<std::string>& comments);
void write_calibration(const Calibration& cal, const std::vector<std::string>& comments,
                       const std::string& path);

}  // namespace fabtrain::calib
