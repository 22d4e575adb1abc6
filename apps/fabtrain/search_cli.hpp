// Options shared by `plan`, `recommend` and `study`: model, slice, batch, what-if latency,
// calibration, and how many tokens to train (for time to train).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "models/model_spec.hpp"
#include "platforms/slice.hpp"
#include "selector/launch_line.hpp"
#include "selector/search.hpp"
#include "selector/study_training.hpp"

namespace fabtrain {

// What the options resolve to: the model, the slice (latency override applied) and the search
// options (calibration included).
struct SearchSetup {
  ModelSpec model;
  Slice slice;
  SearchOptions options;
};

struct SearchCli {
  std::string model = "gpt2-medium";
  std::string slice = "utah-amst";
  int batch = 0;
  int seq = 0;
  double tokens = 0;
  double epochs = 0;
  double dataset_tokens = 0;
  double wan_latency_ms = -1;
  std::string communicator;                    // empty: the slice's
  std::vector<std::string> calibration_files;  // merged as `calibrate merge` merges them
  std::string catalog_file;                    // --catalog: the user's own GPU types, NICs, sites
  std::string precision = "fp32";
  std::string objective = "time-to-train";
  double memory_headroom = 0.10;
  int workers = 0;

  Calibration calibration;  // loaded by resolve()

  void add_to(CLI::App* cmd, bool with_slice = true);
  // Loads model, slice (with the latency override) and calibration; checks the numbers.
  SearchSetup resolve();
  // Tokens to train: --tokens, or epochs x data set tokens, each the user's or the study's
  // (selector/data/study_training.yaml), with where they came from.
  TrainingAmount train_tokens() const;
  std::string describe() const;  // the resolved configuration, three lines
  // Without --tokens or --epochs, one short line: the amount the time to train assumes and how
  // to give one; "" when the user gave it.
  std::string assumed_amount() const;
};

// The search, with a line on standard error while it runs when that is a terminal ("searching
// <what> of <model> on <slice> (n GPUs, n sites)..."), erased when it ends.
SearchResult search_showing_progress(const ModelSpec& model, const Slice& slice,
                                     const SearchOptions& options,
                                     const std::string& what = "plans");

// A plan's GPUs in a table cell: "2@UTAH+2@AMST" when the slice has one GPU type (named once
// above the table by gpu_types_line), else "2xRTX6000@UTAH+1xT4@GPN".
std::string gpu_cell(const Slice& slice, const std::vector<int>& gpus);
std::string gpu_types_line(const Slice& slice);  // "" when there are several types
// The unit a table's memory column uses: GiB, or MiB when no capacity reaches 1 GiB.
double memory_unit_bytes(const std::vector<double>& capacities);
// The --memory-headroom option of plan, recommend and simulate, with its reason.
void add_memory_headroom_option(CLI::App* cmd, double& headroom);
// Refuses a headroom outside [0, 1).
void check_memory_headroom(double headroom);
// A table's memory cell: "16.8/24.0 30%", "23.0/24.0 4% tight".
std::string memory_cell(const Evaluated& e, double unit);

// On standard error, what a calibration does not cover on the slice (calibrate/coverage.hpp).
void print_calibration_warnings(const Calibration& calibration, const Slice& slice);
// --calibration FILE...: several files merged as `calibrate merge` merges them
// (calibrate/merge_calibrations.hpp); their names joined for the resolved configuration.
void add_calibration_option(CLI::App* cmd, std::vector<std::string>& files);
std::string calibration_names(const std::vector<std::string>& files);
// Where `plan` writes the launch line's hostfile: beside a slice file the user gave
// (<slice>.hosts); "" for a built-in slice, whose line places ranks with --host.
std::string launch_hostfile_path(const Slice& slice);
// The launch line with its hostfile written (falls back to --host, with a warning, when the file
// cannot be written).
LaunchLine written_launch_line(const std::string& model_arg, const Slice& slice, const Evaluated& e,
                               int seq);
// "recommended: mpirun ..." (or why the plan is simulate-only) and how to fill it in.
void print_launch(std::FILE* out, const std::string& model_arg, const Slice& slice,
                  const Evaluated& e, int seq);

}  // namespace fabtrain
