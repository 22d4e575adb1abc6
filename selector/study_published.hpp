// The FABRIC study's published wall-clock measurement (selector/data/fabric-study.json): data
// parallel against pipeshard across Utah and Amsterdam, 20 epochs, in minutes, with its source
// and what it leaves unstated. The study report prints it beside fabtrain's prediction.
#pragma once
#include <string>
#include <vector>

namespace fabtrain {

struct StudyMeasurement {
  std::string source;
  std::string slice;
  double rtt_ms = 0;
  double epochs = 0;
  double data_parallel_minutes = 0;
  double pipeshard_minutes = 0;
  std::vector<std::string> unstated;
  double ratio() const { return data_parallel_minutes / pipeshard_minutes; }
};

std::string builtin_study_measurement_path();
// Throws fabtrain::Error naming the file and key (unknown, missing or not positive).
StudyMeasurement load_study_measurement(const std::string& path = builtin_study_measurement_path());

}  // namespace fabtrain
