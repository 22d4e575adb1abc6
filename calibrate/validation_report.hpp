// The emulated-link validation's report (fabtrain validation report), from the work folder of
// scripts/validate-emulated.sh: per (model, delay, plan) the predicted and measured step time and
// their error, calibrated and from the benches alone; whether each delay ranks the plans as
// measured; per instruction kind the predicted (simulator trace) and measured (run record)
// seconds per step; the measurement's noise floor; the cases not measured and why; a mode's
// step ratio; the mean absolute percentage error, and whether the mode passes its limit (with
// the limit over the error as a "ratio" line, which bench/emulated-accuracy.sh collects).
// Communication is what the run record and the trace's verbs say (plan/verb.hpp), not a list.
// Not here: measuring, calibrating or simulating (the script runs the programs).
#pragma once
#include <cstdio>
#include <map>
#include <string>

#include "calibrate/validation_matrix.hpp"

namespace fabtrain {

// Seconds per step by kind ("fwd", "bwd", "opt", "load", "comm"): compute, the slowest rank's;
// communication, the least waiting rank's (the other one's also holds the time it waited for
// its peer to compute).
using KindSeconds = std::map<std::string, double>;

struct MeasuredStep {
  double step_s = 0;  // the median step after the first (which opens the connections)
  KindSeconds kinds;  // averaged over the same steps
  // The median over the same steps of the least waiting rank's communication (0 where none).
  double exposed_comm_s = 0;
};
MeasuredStep measured_step(const std::string& run_record);
// From a simulator's Chrome trace, leaving out the lane of transfers in flight (not time the
// rank waited).
KindSeconds predicted_kinds(const std::string& trace);

// The work folder's files, as the script names them: for model name N, plan P, one-way delay D,
// TAG = N-P-D with P's ',', '=' and ':' as '_': run-TAG.jsonl, sim-cal-TAG.json,
// sim-cal-bench-TAG.json, trace-cal-TAG.json, skip-TAG.txt; plans-N (a plan a line);
// invalid-D.txt (a delay the emulator could not carry).
std::string validation_model_name(const std::string& model);  // N: a built-in's, a config's folder
std::string validation_case_tag(const std::string& model_name, std::string plan,
                                const std::string& delay);       // TAG
double simulated_step_time(const std::string& simulation_json);  // its step_time_s

struct ValidationReportInput {
  ValidationMode mode;  // models and delays as run, full_size, ratio and pass
  std::string work;
  bool judge = false;  // apply mode.pass
};
// Prints the report; returns whether it passes (every delay valid, some case measured and, when
// judged, within the mode's limit).
bool print_validation_report(const ValidationReportInput& input, std::FILE* out);

}  // namespace fabtrain
