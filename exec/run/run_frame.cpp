// The frame train and replay share (see run_frame.hpp).
#include "exec/run/run_frame.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/host_info.hpp"
#include "common/human_units.hpp"
#include "common/text_table.hpp"
#include "common/text_wrap.hpp"
#include "exec/run/overlap_check.hpp"
#include "exec/run/step_timings.hpp"

namespace fabtrain {
namespace {

// The schedule's group of every rank (its gradient norm's), which the run's own bookkeeping uses
// too: losses, timings, memory checks.
int schedule_world_group(const Schedule& schedule, int rank) {
  const int g = schedule.group_of(rank, GroupKind::world);
  if (g < 0) fail("rank {}: the schedule has no group of all ranks", rank);
  return g;
}

// Sets the progress mode before the groups: both are the communicator's before any transfer.
MpiCommunicator& with_progress(MpiCommunicator& comm, const std::string& mpi_progress) {
  if (!mpi_progress.empty()) comm.set_progress(parse_mpi_progress(mpi_progress));
  return comm;
}

}  // namespace

void check_job(const Plan& plan, const MpiCommunicator& comm, int steps) {
  if (plan.ranks() != comm.size())
    fail(
        "plan {} needs dp*tp*pp = {}*{}*{} = {} ranks, but the job has {} (start it with "
        "mpirun -np {})",
        to_string(plan), plan.dp, plan.tp, plan.pp, plan.ranks(), comm.size(), plan.ranks());
  if (steps < 1) fail("--steps {} must be at least 1", steps);
}

void print_banner_head(const std::string& title, const ModelSpec& model, const Plan& plan,
                       int ranks, int microbatch, int seq) {
  fmt::print("{}\n", title);
  fmt::print("  model    {} (L={} C={} NH={} maxT={} V={}, {} parameters)\n", model.name,
             model.n_layer, model.n_embd, model.n_head, model.n_ctx, model.vocab_size,
             model.parameters());
  // The plan's text is long: its line wraps after commas within $COLUMNS (else 100).
  fmt::print("{}\n",
             fit_lines(fmt::format("  plan     {} ({}), {}, microbatch {} x {}", to_string(plan),
                                   technique_name(plan), counted(ranks, "rank"), microbatch,
                                   counted(seq, "token")),
                       table_width(false)));
}

RunHeader run_header(const ModelSpec& model, const Plan& plan, int microbatch,
                     const MpiCommunicator& comm, const std::string& device, int threads, int batch,
                     int seq, int steps, int start_step) {
  RunHeader h;
  h.model = model;
  h.plan = plan;
  h.world = comm.size();
  h.host = comm.host();
  h.cpu = cpu_model();
  h.mpi_version = comm.library_version();
  h.ranks_on_host = comm.local_size();
  h.device = device;
  h.threads = threads;
  h.batch = batch;
  h.seq = seq;
  h.microbatch = microbatch;
  h.steps = steps;
  h.start_step = start_step;
  return h;
}

RunFrame::RunFrame(MpiCommunicator& comm, const Schedule& schedule, const std::string& mpi_progress,
                   double timeout_s)
    : comm_(with_progress(comm, mpi_progress)),
      schedule_(schedule),
      world_group_(schedule_world_group(schedule, comm.rank())),
      watchdog_(comm, timeout_s) {
  comm_.set_groups(schedule.groups);
}

WatchedWait RunFrame::waiting(const std::string& what) {
  return WatchedWait(&watchdog_, fmt::format("rank {}: {}", comm_.rank(), what));
}

void RunFrame::warn_overlap(const Communicator& schedule_comm) const {
  if (const std::string warning = overlap_warning(schedule_.plan, schedule_comm);
      !warning.empty() && root())
    fmt::print(stderr, "{}\n", warning);
}

void RunFrame::open_outputs(const RunOutputOptions& options,
                            const std::function<nlohmann::json()>& header) {
  options_ = options;
  if (root()) {
    if (!options.record.empty()) {
      record_ = std::make_unique<RunRecord>(options.record);
      record_->header(header());
    }
    if (!options.trace.empty()) trace_ = std::make_unique<ChromeTrace>(comm_.size());
    progress_ = std::make_unique<Progress>(options.steps, options.print_every);
  }
  if (options.timed) {
    const WatchedWait watch = waiting("aligning the clocks with rank 0");
    clock_ = align_clocks(comm_);  // on every rank: one time line
  }
}

StepSummary RunFrame::step(int step, const PlayStep& play, const AfterStep& after,
                           const ShowStep& show) {
  if (options_.timed) {
    const WatchedWait watch = waiting(fmt::format("step {}: barrier before the step", step + 1));
    comm_.barrier();  // one time origin for every rank's instruction timings
  }
  StepSummary summary;
  summary.step = step;
  const Clock::time_point start = Clock::now();
  const std::vector<InstructionTiming> mine = play(summary);
  summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  summary.tokens_per_s = options_.tokens_per_step / summary.wall_s;
  if (after) after(summary);
  StepTimings timings;
  double step_start_s = 0;  // the earliest rank's, on the aligned clock
  if (options_.timed) {
    const WatchedWait watch = waiting(fmt::format("step {}: gathering timings", step + 1));
    timings = gather_step_timings(comm_, world_group_, schedule_, mine, clock_.seconds(start),
                                  &step_start_s);
  }
  if (root()) {
    show(*progress_, summary);
    if (record_) record_->step(summary, schedule_, timings);
    if (trace_) trace_->add_step(summary.step, step_start_s, schedule_, timings);
  }
  return summary;
}

void RunFrame::finish() {
  if (trace_) trace_->write(options_.trace);
  progress_.reset();
  const WatchedWait watch = waiting("barrier at the end of the run");
  comm_.barrier();
}

}  // namespace fabtrain
