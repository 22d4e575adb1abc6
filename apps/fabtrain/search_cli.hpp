// Options shared by `plan`, `recommend` and `study`: model, slice, batch, what-if latency,
// calibration, and how many tokens to train (for time to train).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "models/model_spec.hpp"
#include "platforms/slice.hpp"
#include "selector/search.hpp"

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
  std::string communicator;  // empty: the slice's
  std::string calibration_file;
  std::string precision = "fp32";
  int workers = 0;

  Calibration calibration;  // loaded by resolve()

  void add_to(CLI::App* cmd, bool with_slice = true);
  // Loads model, slice (with the latency override) and calibration; checks the numbers.
  SearchSetup resolve();
  // Tokens to train: --tokens, or --epochs x --dataset-tokens; nullopt when neither.
  std::optional<double> train_tokens() const;
  std::string describe() const;  // the resolved configuration, one line
};

std::string format_duration(double seconds);
std::string format_gib(double bytes);
// The line a user pastes to run the plan for real.
std::string exec_command(const ModelSpec& model, const Evaluated& e, int seq);

}  // namespace fabtrain
