// The files a run writes for calibration and for people: the run record (JSON lines, format in
// plan/run_record_format.hpp, read back by calibrate/) and the Chrome trace of the measured
// timeline (plan/chrome_trace.hpp, the simulator's processes, lanes and names).
// Not here: taking the measurements (exec/play/interpreter.cpp), aligning the ranks' clocks
// (exec/comm/clock_alignment.hpp) or gathering them (exec/run/step_timings.hpp).
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/run_record_format.hpp"
#include "plan/schedule.hpp"
#include "plan/timeline.hpp"

namespace fabtrain {

class RunRecord {
 public:
  explicit RunRecord(const std::string& path);  // truncates; Error if it cannot be written
  void header(const nlohmann::json& header);
  // timings may be empty (not gathered).
  void step(const StepSummary& summary, const Schedule& schedule, const StepTimings& timings);

 private:
  void write_line(const nlohmann::json& line);
  std::string path_;
  std::ofstream out_;
};

class ChromeTrace {
 public:
  // labels: one per rank (host, device), shown next to "rank R".
  explicit ChromeTrace(int ranks, std::vector<std::string> labels = {});
  // step_start_s: when this step started (the earliest rank), from the start of the run.
  void add_step(int step, double step_start_s, const Schedule& schedule,
                const StepTimings& timings);
  void write(const std::string& path) const;

 private:
  int ranks_;
  std::vector<std::string> labels_;
  const Schedule* schedule_ = nullptr;  // the run's, the same every step
  std::vector<TimelineEvent> events_;
};

}  // namespace fabtrain
