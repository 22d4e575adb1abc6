// Progress a person can follow on long runs: step, loss, tokens/s and ETA on one line that
// updates in place on a terminal, or one plain line per report when the output is a file or pipe.
// Validation losses get their own line. Not here: the run record (exec/run/run_record.hpp).
#pragma once
#include <cstdio>
#include <string>

namespace fabtrain {

class Progress {
 public:
  // every: print a plain line every `every` steps when not on a terminal (first and last always).
  Progress(int total_steps, int every, std::FILE* out = stdout);
  ~Progress();
  void step(int step, float loss, double tokens_per_s, double step_s, float lr, float grad_norm);
  // A step with no model math (replay): its timing, and "timing only" where the loss would be.
  void timing_step(int step, double tokens_per_s, double step_s);
  void validation(int step, float val_loss);
  void message(const std::string& text);
  static std::string format_duration(double seconds);
  static bool launched_by_mpi();

 private:
  void report(int step, const std::string& values, double tokens_per_s, double step_s);
  void end_line();
  int total_, every_;
  std::FILE* out_;
  bool terminal_;
  bool line_open_ = false;
  double elapsed_s_ = 0;
  int steps_timed_ = 0;
};

}  // namespace fabtrain
