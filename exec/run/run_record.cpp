// Run record lines and the measured Chrome trace (see run_record.hpp).
#include "exec/run/run_record.hpp"

#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "plan/chrome_trace.hpp"

namespace fabtrain {

RunRecord::RunRecord(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) fail("--record {}: cannot write the file", path);
}

void RunRecord::write_line(const nlohmann::json& line) {
  out_ << line.dump() << '\n';
  out_.flush();
  if (!out_) fail("--record {}: write error (disk full?)", path_);
}

void RunRecord::header(const nlohmann::json& header) {
  nlohmann::json line = header;
  line["type"] = "header";
  write_line(line);
}

void RunRecord::step(const StepSummary& s, const Schedule& schedule, const StepTimings& timings) {
  write_line(to_json(step_line(s, schedule, timings)));
}

ChromeTrace::ChromeTrace(int ranks, std::vector<std::string> labels)
    : ranks_(ranks), labels_(std::move(labels)) {}

void ChromeTrace::add_step(int step, double step_start_s, const Schedule& schedule,
                           const StepTimings& timings) {
  if (schedule.world != ranks_)
    fail("trace of {} ranks given a schedule of {}", ranks_, schedule.world);
  schedule_ = &schedule;
  for (int r = 0; r < int(timings.size()); ++r)
    for (std::size_t i = 0; i < timings[r].size() && i < schedule.ranks[r].size(); ++i) {
      const double start = step_start_s + timings[r][i].start_s;
      events_.push_back({r, blocking_lane(schedule.ranks[r][i]), int(i), start,
                         start + timings[r][i].duration_s, step});
    }
}

void ChromeTrace::write(const std::string& path) const {
  static const Schedule empty;
  const Schedule& schedule = schedule_ ? *schedule_ : empty;
  const std::string text = chrome_trace(schedule, events_, labels_).dump();
  write_text_atomically(path, text, "--trace");
}

}  // namespace fabtrain
