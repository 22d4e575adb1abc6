// The emulated-link validation's matrix (calibrate/data/validation_matrix.yaml), read strictly:
// per mode of scripts/validate-emulated.sh the models, plans and one-way delays it measures, the
// plans whose step ratio it reports, the limit its checking modes must pass, and how each case
// runs. The script asks for it (fabtrain validation cases) instead of keeping its own lists.
// Not here: measuring (the script), the report (validation_report.hpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace fabtrain {

struct ValidationPass {
  bool bench_only = false;   // the error of the prediction from the benches alone, else calibrated
  double max_error_pct = 0;  // mean absolute percentage error at most
  bool ranking_agrees = true;  // every delay ranks the plans as measured
};

// How each case of a mode runs (the script's settings).
struct ValidationRun {
  std::string player;       // train or replay
  int steps = 0, seq = 0;   // steps per run (the first not measured), tokens per sequence
  int batch = 0;            // sequences per step (full-size modes: per GPU)
  std::string device_type;  // the catalog's GPU type
  std::string slice;        // a file of platforms/data/slices/
  int link_mbit = 0;        // the emulated link's rate each way
  int nice = 0;             // the ranks' nice level
};

struct ValidationMode {
  std::string name;
  std::vector<std::string> models, plans;
  std::vector<std::string> delays;  // one-way ms, as written ("51.5"), each a finite number >= 0
  bool full_size = false;           // rows by round trip; the ratio reported
  // Plans whose measured and predicted steps are compared as a ratio, of one over the other, and
  // the ratio's name ("dp/pipeshard"); empty: none.
  std::string ratio_name, ratio_of, ratio_over;
  std::optional<ValidationPass> pass;  // none: the mode reports and does not judge
  ValidationRun run;
};

std::string builtin_validation_matrix_path();
// The mode of that name; an unknown one is an error listing the modes there are.
ValidationMode load_validation_mode(const std::string& path, const std::string& mode);

}  // namespace fabtrain
