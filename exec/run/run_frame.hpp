// The frame train and replay share around their player: the schedule's group of all ranks, the
// banner's first lines, the run record's header, and rank 0's outputs (run record,
// Chrome trace, progress) fed once per step. Not here: playing a step (exec/play/) or what only
// one of the runs does (data, checkpoints, validation; modelled compute and its memory check).
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exec/comm/mpi_communicator.hpp"
#include "exec/run/progress.hpp"
#include "exec/run/run_record.hpp"
#include "models/model_spec.hpp"
#include "plan/run_record_format.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

// The schedule's group of every rank (its gradient norm's), which the run's own bookkeeping uses
// too: losses, timings, memory checks.
int world_group(const Schedule& schedule, int rank);

// The banner's title, model and plan lines (rank 0 prints them).
void print_banner_head(const std::string& title, const ModelSpec& model, const Plan& plan,
                       int ranks, int microbatch, int seq);

// The run record's header of a job on `comm`: the fields every run records; a run adds its own
// keys to to_json() of it.
RunHeader run_header(const ModelSpec& model, const Plan& plan, int microbatch,
                     const MpiCommunicator& comm, const std::string& device, int threads, int batch,
                     int seq, int steps, int start_step);

// Rank 0's outputs of a run; on other ranks all three are empty.
struct RunOutputs {
  std::unique_ptr<RunRecord> record;
  std::unique_ptr<ChromeTrace> trace;
  std::unique_ptr<Progress> progress;

  // The step into the record and the trace, where they are open.
  void step(const StepSummary& summary, const Schedule& schedule, const StepTimings& timings,
            double step_start_s);
  // At the end of the run: writes the trace and closes the progress line.
  void finish(const std::string& trace_path);
};

// Opens rank 0's outputs: the run record at record_path (when given) with header(), the trace
// (when trace_path is given) and progress every print_every steps of `steps`.
RunOutputs open_run_outputs(bool root, const std::string& record_path,
                            const std::function<nlohmann::json()>& header,
                            const std::string& trace_path, int ranks, int steps, int print_every);

}  // namespace fabtrain
