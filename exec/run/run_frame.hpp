// The frame train and replay share around their player, on one rank: the job's check against the
// plan, the schedule's groups on the MPI communicator, the watchdog of every wait on peers, the
// banner's first lines, the run record's header, rank 0's outputs (run record, Chrome trace,
// progress) and the step: a barrier that gives every rank's timings one origin, the player's
// step timed, every rank's timings gathered, shown, recorded and traced. Not here: playing a
// step (exec/play/) or what only one of the runs does (data, checkpoints, validation; modelled
// compute and its memory check).
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exec/comm/clock_alignment.hpp"
#include "exec/comm/mpi_communicator.hpp"
#include "exec/comm/watchdog.hpp"
#include "exec/run/progress.hpp"
#include "exec/run/run_record.hpp"
#include "models/model_spec.hpp"
#include "plan/run_record_format.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

// Refuses a job of another size than the plan's (naming the mpirun line) and fewer than 1 step.
void check_job(const Plan& plan, const MpiCommunicator& comm, int steps);

// The banner's title, model and plan lines (rank 0 prints them).
void print_banner_head(const std::string& title, const ModelSpec& model, const Plan& plan,
                       int ranks, int microbatch, int seq);

// The run record's header of a job on `comm`: the fields every run records; a run adds its own
// keys to to_json() of it.
RunHeader run_header(const ModelSpec& model, const Plan& plan, int microbatch,
                     const MpiCommunicator& comm, const std::string& device, int threads, int batch,
                     int seq, int steps, int start_step);

// What a run writes and shows, and whether its steps are timed (a replay's always are; a
// training's when it writes a record or a trace).
struct RunOutputOptions {
  std::string record, trace;  // paths; empty: not written
  int steps = 1, print_every = 10;
  double tokens_per_step = 0;
  bool timed = true;
};

// One rank's run around its player (see the top of this file).
class RunFrame {
 public:
  using Clock = std::chrono::steady_clock;
  // Plays the step on this rank and returns its instructions' timings, filling what it knows of
  // the summary (loss, lr, norm); its seconds are the step's wall time.
  using PlayStep = std::function<std::vector<InstructionTiming>(StepSummary&)>;
  // Runs after the timed play, before the timings are gathered (validation, memory): may
  // communicate, on every rank.
  using AfterStep = std::function<void(StepSummary&)>;
  // Shows the step on rank 0's progress line.
  using ShowStep = std::function<void(Progress&, const StepSummary&)>;

  // The MPI progress mode (empty: the communicator's default), the schedule's groups on `comm`
  // and the watchdog of every wait on peers, timing out after timeout_s.
  RunFrame(MpiCommunicator& comm, const Schedule& schedule, const std::string& mpi_progress,
           double timeout_s);

  bool root() const { return comm_.rank() == 0; }
  int world_group() const { return world_group_; }
  Watchdog& watchdog() { return watchdog_; }
  // A wait on every peer, under the watchdog: "rank R: what" names it when a peer stops.
  WatchedWait waiting(const std::string& what);
  // Rank 0 warns when the plan asks for overlap that schedule_comm cannot give.
  void warn_overlap(const Communicator& schedule_comm) const;

  // Opens rank 0's outputs (the record with header()) and, when steps are timed, aligns every
  // rank's clock with rank 0's.
  void open_outputs(const RunOutputOptions& options, const std::function<nlohmann::json()>& header);
  // One step on every rank: play (timed), after, then every rank's timings gathered (when
  // timed), rank 0 shows, records and traces it. Returns the step's summary.
  StepSummary step(int step, const PlayStep& play, const AfterStep& after, const ShowStep& show);
  // The end of the run: the trace written, the progress line closed, and a barrier.
  void finish();

 private:
  MpiCommunicator& comm_;
  const Schedule& schedule_;
  int world_group_;
  Watchdog watchdog_;
  RunOutputOptions options_;
  // Rank 0's outputs; on other ranks all three stay empty.
  std::unique_ptr<RunRecord> record_;
  std::unique_ptr<ChromeTrace> trace_;
  std::unique_ptr<Progress> progress_;
  AlignedClock clock_;  // every rank's clock on rank 0's time line (when timed)
};

}  // namespace fabtrain
