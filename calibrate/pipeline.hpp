// The whole calibration as `fabtrain calibrate` runs it, callable without the command line: read
// the bench files and run records; fit compute from the first bench (and refine it on the runs,
// with each run's in-sample and held-out prediction error); fit the link class (and the intra-VM
// one); optionally the collective and p2p corrections from the benches' sweeps and the runs'
// calls, and the corrections that make simulated whole steps match the runs'. It prints what it
// fits and returns the calibration with the comments its file carries.
// Not here: the fits themselves (fit_*.hpp), reading inputs (inputs.hpp), writing the file
// (calibration_file.hpp), the flags (apps/fabtrain/cmd_calibrate.cpp).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "sim/cost/calibration.hpp"

namespace fabtrain::calib {

struct CalibrationRequest {
  std::vector<std::string> benches, runs;    // bench files (at least one), run records
  std::string device_type = "CPU_HOST";      // catalog GPU/CPU type the benches ran on
  std::string link_class = "l2sts";          // the class the ranks' pairs measured
  std::string communicator = "openmpi-tcp";  // what moved the benches' and runs' bytes
  double path_rtt_ms = 0;                    // the round trip the path added to the first bench
  std::vector<double> bench_path_rtt_ms;     // one per bench, or empty
  std::vector<double> run_path_rtt_ms;       // one per run, or empty: the first bench's path
  bool fit_collectives = false;
  double small_collective_bytes = 4096;
  std::string fit_steps_slice;  // empty: no step fit
  std::string intra_vm_bench;   // a bench of two ranks inside one VM: fits the pcie class
  bool keep_compute = false;    // compute stays the catalog's (runs of fabtrain-exec replay)
};

struct CalibrationOutcome {
  Calibration calibration;
  std::vector<std::string> comments;  // for the file's header
};

// Prints the fit to `out`. Throws fabtrain::Error on bad input, naming the flag and the rule.
CalibrationOutcome run_calibration(const CalibrationRequest& request, std::FILE* out);

}  // namespace fabtrain::calib
