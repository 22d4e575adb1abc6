// fabtrain calibrate: fit the simulator's cost parameters from `fabtrain-exec bench` files and,
// optionally, executor run records; print the fit and the prediction error per run (in sample,
// and held out: each run predicted by a fit on the others); write the calibration YAML that
// `fabtrain simulate --calibration` reads. The pipeline itself is calibrate/pipeline.hpp.
// fabtrain calibrate merge A.yaml B.yaml -o C.yaml: calibrations fitted on different GPU types
// (or link classes) in one file (calibrate/merge_calibrations.hpp).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/merge_calibrations.hpp"
#include "calibrate/pipeline.hpp"
#include "command.hpp"
#include "common/error.hpp"
#include "sim/cost/calibration_file.hpp"

namespace fabtrain {
namespace {

struct CalibrateOptions {
  calib::CalibrationRequest request;
  std::string output;
};

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output;
};

void run(const CalibrateOptions& o) {
  // Required here rather than by CLI11, which would also ask for them under `calibrate merge`.
  if (o.request.benches.empty())
    fail("calibrate: --bench is required (or: fabtrain calibrate merge A.yaml B.yaml -o C.yaml)");
  if (o.output.empty()) fail("calibrate: --output is required");
  const calib::CalibrationOutcome outcome = calib::run_calibration(o.request, stdout);
  write_calibration(outcome.calibration, outcome.comments, o.output);
  fmt::print("\nwrote {}\n", o.output);
}

void merge(const MergeOptions& o) {
  if (o.inputs.size() < 2)
    fail("calibrate merge: give two or more calibration files to merge (got {})", o.inputs.size());
  std::vector<Calibration> parts;
  for (const auto& path : o.inputs) parts.push_back(load_calibration(path));
  const Calibration merged = calib::merge_calibrations(parts);
  const auto comments = calib::merge_comments(parts);
  write_calibration(merged, comments, o.output);
  for (std::size_t i = 1; i < comments.size(); ++i) fmt::print("{}\n", comments[i]);
  fmt::print("wrote {}\n", o.output);
}

Registration reg(80, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate", "Fit the simulator's cost parameters from bench files and run records");
  auto o = std::make_shared<CalibrateOptions>();
  cmd->add_option("--bench", o->request.benches,
                  "fabtrain-exec bench files (the first gives compute; all give links); required");
  cmd->add_option("--runs", o->request.runs,
                  "Run records (fabtrain-exec train --record) to refine compute");
  cmd->add_option("--device-type", o->request.device_type, "Catalog GPU/CPU type the bench ran on")
      ->capture_default_str();
  cmd->add_option("--link-class", o->request.link_class, "Link class the ranks' pairs measured")
      ->capture_default_str();
  cmd->add_option(
         "--communicator", o->request.communicator,
         "Communicator profile that moved the benches' and runs' bytes (catalog communicators)")
      ->capture_default_str();
  auto* path_rtt =
      cmd->add_option(
             "--path-rtt-ms", o->request.path_rtt_ms,
             "Round trip the path itself added during the shortest-RTT bench (0: no added delay)")
          ->capture_default_str();
  cmd->add_option("--bench-path-rtt-ms", o->request.bench_path_rtt_ms,
                  "Round trip each bench's path added, one per --bench in order (e.g. 0,100); "
                  "latency is the smallest corrected round trip / 2")
      ->delimiter(',')
      ->excludes(path_rtt);
  // Opt-in: runs over a short path alone cannot tell latency terms from per-call overheads (on
  // the emulated link, fitting on the benches plus 0 ms runs made the 5-50 ms predictions worse;
  // adding runs at the far delay made them better), so the default output stays as before.
  cmd->add_flag(
      "--fit-collectives", o->request.fit_collectives,
      "Also fit per-op collective corrections (latency terms, bandwidth factor, per-call "
      "overhead) from the benches' collective sweeps and the runs' calls, and the p2p one from "
      "the benches' message ping-pongs; give runs over a long path too (--run-path-rtt-ms)");
  cmd->add_option(
         "--small-collective-bytes", o->request.small_collective_bytes,
         "Collective calls of at most this many bytes get their own latency terms (libraries "
         "play small buffers with a latency-optimal algorithm); 0: no split")
      ->capture_default_str();
  cmd->add_option("--run-path-rtt-ms", o->request.run_path_rtt_ms,
                  "Round trip each run's path added, one per --runs in order (default: the first "
                  "bench's); used by --fit-collectives and --fit-steps")
      ->delimiter(',');
  cmd->add_option(
      "--fit-steps", o->request.fit_steps_slice,
      "Slice file the runs ran on: fit the collective corrections (latency terms, bandwidth "
      "factor, per-call overhead) and, for pipelines, the p2p ones so that simulating each "
      "run matches its measured step (median after the first); paths as --run-path-rtt-ms");
  cmd->add_option("--intra-vm-bench", o->request.intra_vm_bench,
                  "A bench of two ranks inside one VM: fit the intra-VM (pcie) link class from it");
  cmd->add_flag(
      "--keep-compute", o->request.keep_compute,
      "Leave compute at the catalog's (runs of fabtrain-exec replay, whose compute is modelled)");
  cmd->add_option("-o,--output", o->output, "The calibration YAML to write; required");

  auto* merge_cmd = cmd->add_subcommand(
      "merge",
      "Merge calibrations fitted on different GPU types or link classes into one file (an "
      "entry two files give differently is refused)");
  auto m = std::make_shared<MergeOptions>();
  merge_cmd->add_option("files", m->inputs, "Calibration YAML files (two or more)")->required();
  merge_cmd->add_option("-o,--output", m->output, "The merged calibration YAML to write")
      ->required();
  merge_cmd->callback([m] { merge(*m); });
  cmd->callback([o, merge_cmd] {
    if (!merge_cmd->parsed()) run(*o);
  });
});

}  // namespace
}  // namespace fabtrain
