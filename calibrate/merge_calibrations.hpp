// Calibrations fitted on different hardware combined into one file the simulator reads: a fit on
// A30 VMs and one on RTX 6000 VMs give one calibration with compute entries for both GPU types
// (the simulator looks each rank's GPU type up), link entries per link class, and the collective
// and point-to-point corrections of either. An entry that two files both give must be the same
// in both, else the merge is refused naming the entry and both files: which of two fits applies
// is not something a merge can decide. Not here: fitting (pipeline.hpp), reading and writing
// the file (sim/cost/calibration.hpp, calibration_file.hpp).
#pragma once
#include <string>
#include <vector>

#include "sim/cost/calibration.hpp"

namespace fabtrain::calib {

// Throws fabtrain::Error on conflicting entries (each named with its two sources), its message
// starting with `command`. The held-out step error of the result is the largest of the parts'
// (the ranking is as trustworthy as the worst fit it uses); its source lists the parts' sources.
Calibration merge_calibrations(const std::vector<Calibration>& parts,
                               const std::string& command = "calibrate merge");

// The calibration several files give together, as `calibrate merge` would merge them (one file:
// that file as it is); `command` starts the message of a conflict ("--calibration").
Calibration load_calibrations(const std::vector<std::string>& paths, const std::string& command);

// Comment lines for the merged file: what each part contributed.
std::vector<std::string> merge_comments(const std::vector<Calibration>& parts);

}  // namespace fabtrain::calib
