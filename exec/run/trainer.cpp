// One rank's training run (see trainer.hpp).
#include "exec/run/trainer.hpp"

#include <cblas.h>
#include <omp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/data_paths.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "common/limits.hpp"
#include "exec/backends/backend.hpp"
#include "exec/comm/agreed_step.hpp"
#include "exec/comm/watchdog.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/kernels_layout.hpp"
#include "exec/model/lr_schedule.hpp"
#include "exec/model/model_file.hpp"
#include "exec/model/trainable_model.hpp"
#include "exec/play/interpreter.hpp"
#include "exec/run/checkpoint_dir.hpp"
#include "exec/run/data_loader.hpp"
#include "exec/run/host_memory.hpp"
#include "exec/run/loss_scaling_resume.hpp"
#include "exec/run/rank_state.hpp"
#include "exec/run/run_frame.hpp"
#include "exec/run/transfer_peers.hpp"
#include "models/model_spec.hpp"
#include "plan/executor_support.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {
namespace {

// Under mpirun a rank is its launcher's child on the launcher's host (and the daemon's child
// elsewhere): when that dies, the rank must not go on writing checkpoints.
bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK");
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

// The settings a resumed run must share with the one that wrote the checkpoint: they change what
// is trained on, or how (the plan, with its schedule, is checked on its own).
std::string resume_settings(const TrainConfig& c) {
  return fmt::format(
      "seq={} batch={} data={} lr={} warmup={} lr-min-fraction={} weight-decay={} "
      "grad-clip={}",
      c.seq, c.batch, join(c.data), c.lr, c.warmup, c.lr_min_fraction, c.weight_decay, c.grad_clip);
}

// The first setting that differs, by name: "seq=64 in the checkpoint, seq=32 now".
std::string first_difference(const std::string& saved, const std::string& now) {
  std::istringstream a(saved), b(now);
  std::string x, y;
  while (a >> x) {
    if (!(b >> y)) return x + " in the checkpoint, missing now";
    if (x != y) return fmt::format("{} in the checkpoint, {} now", x, y);
  }
  return b >> y ? y + " now, missing in the checkpoint" : "";
}

// Everything one rank needs during the run.
struct Run {
  Run(const TrainConfig& c, MpiCommunicator& m) : config(c), comm(m) {}
  const TrainConfig& config;
  MpiCommunicator& comm;
  ModelSpec model;
  Plan plan;
  Schedule schedule;
  RankCoord coord;
  std::unique_ptr<RunFrame> frame;  // groups, watchdog, outputs and the step's frame
  std::unique_ptr<Stage> stage;
  std::unique_ptr<Interpreter> interpreter;
  std::unique_ptr<DataLoader> train_data, val_data;

  bool is_root() const { return comm.rank() == 0; }

  // The global sequence index of microbatch mb of this rank's replica in global batch `batch`.
  std::int64_t first_sequence(std::int64_t batch, int mb) const {
    const int per_replica = schedule.global_batch / plan.dp;
    return batch * schedule.global_batch + std::int64_t(coord.dp) * per_replica +
           std::int64_t(mb) * schedule.microbatch;
  }

  MicrobatchFeed feed(const DataLoader* loader, std::int64_t batch) const {
    return [this, loader, batch](int mb, std::span<int> tokens, std::span<int> targets) {
      if (!loader)
        fail("rank {} was asked for data but holds neither embedding nor head", comm.rank());
      loader->sequences(first_sequence(batch, mb), schedule.microbatch, tokens, targets);
    };
  }

  // A wait on every peer, under the watchdog: a stopped peer ends the job instead of hanging it.
  WatchedWait waiting(const std::string& what) const { return frame->waiting(what); }

  float world_sum(float value) {
    const WatchedWait watch = waiting("summing the loss over the ranks");
    comm.all_reduce(frame->world_group(), std::span<float>(&value, 1));
    return value;
  }

  float validate() {
    double sum = 0;
    for (int vb = 0; vb < config.val_batches; ++vb)
      sum += interpreter->evaluate(feed(val_data.get(), vb));
    return world_sum(float(sum / double(plan.mb * plan.dp))) / float(config.val_batches);
  }

  // The full llm.c parameter vector on every rank: each element contributed by exactly one rank.
  std::vector<float> gather_full_parameters() {
    const WatchedWait watch = waiting("gathering the parameters for a checkpoint");
    interpreter->gather_parameters();
    std::vector<float> full(std::size_t(full_layout(model).total), 0.0f);
    if (coord.dp == 0) {
      const auto params = stage->params();
      const auto& counted = interpreter->counted_mask();
      for (const ParamRun& run : stage->param_runs())
        for (std::int64_t k = 0; k < run.count; ++k)
          if (counted[run.local_offset + k])
            full[run.full_offset + k] = params[run.local_offset + k];
    }
    comm.all_reduce(frame->world_group(), full);
    return full;
  }

  void save_checkpoint(std::int64_t steps_done) {
    const std::vector<float> full = gather_full_parameters();
    const std::string& dir = config.checkpoint_dir;
    if (launcher_died())
      fail("the launcher of this rank died (killed mpirun?): stopping before writing step {}",
           steps_done);
    if (is_root())
      write_model_checkpoint(model_checkpoint_path(dir, steps_done), model, full, steps_done);
    RankState state;
    state.step = steps_done;
    state.data_position = steps_done * schedule.global_batch;
    state.seed = config.seed;
    state.world = comm.size();
    state.rank = comm.rank();
    state.plan = to_string(plan);
    state.settings = resume_settings(config);
    state.adam_m = interpreter->adam_m();
    state.adam_v = interpreter->adam_v();
    state.loss_scaling = interpreter->loss_scaling_state();
    write_rank_state(rank_state_path(dir, steps_done, comm.rank()), state);
    {
      const WatchedWait watch = waiting(fmt::format("checkpoint of step {}: barrier", steps_done));
      comm.barrier();  // every rank's files are complete before "latest" names them
    }
    if (is_root()) write_latest_step(dir, steps_done);
    {
      const WatchedWait watch = waiting(fmt::format("checkpoint of step {}: barrier", steps_done));
      comm.barrier();  // "latest" names the new step before anyone removes an older one
    }
    prune_checkpoints(dir, config.keep_checkpoints, comm.rank(), is_root());
  }

  // An orphan keeps its launcher's pid as parent no more (it is re-parented).
  pid_t launcher = ::getppid();
  bool launcher_died() const { return launched_by_mpirun() && ::getppid() != launcher; }

  // Returns the number of steps already done.
  int resume() {
    const auto latest = read_latest_step(config.checkpoint_dir);
    if (!latest) {
      if (is_root())
        fmt::print("resume: no checkpoint in {} yet, starting from step 0\n",
                   config.checkpoint_dir);
      return 0;
    }
    const std::int64_t step = *latest;
    if (step >= config.steps)
      fail(
          "--resume: {} holds {} steps done and --steps is {}: nothing to do (give --steps above "
          "{})",
          config.checkpoint_dir, step, config.steps, step);
    stage->load_full(
        read_model_checkpoint(model_checkpoint_path(config.checkpoint_dir, step), model, step));
    const std::string state_path = rank_state_path(config.checkpoint_dir, step, comm.rank());
    RankState state = read_rank_state(state_path);
    if (state.world != comm.size() || state.rank != comm.rank())
      fail("state file {}: written by rank {} of {}, this is rank {} of {}", state_path, state.rank,
           state.world, comm.rank(), comm.size());
    if (state.plan != to_string(plan))
      fail("state file {}: written under plan {}, this run uses {}", state_path, state.plan,
           to_string(plan));
    if (state.version < 3 && plan.zero > 0)
      fail(
          "state file {}: version {} holds ZeRO shards of the whole stage, while this "
          "fabtrain-exec "
          "shards each gradient bucket: resume it with the fabtrain-exec that wrote it",
          state_path, state.version);
    if (const std::string d = first_difference(state.settings, resume_settings(config)); !d.empty())
      fail("--resume: {} was written with other settings ({}); resume with the same ones",
           state_path, d);
    if (state.seed != config.seed)
      fail("state file {}: seed {}, this run uses --seed {}", state_path, state.seed, config.seed);
    if (state.step != step || state.data_position != step * schedule.global_batch)
      fail("state file {}: step {} and data position {} do not match step {} at batch {}",
           state_path, state.step, state.data_position, step, schedule.global_batch);
    if (state.adam_m.size() != interpreter->adam_m().size() ||
        state.adam_v.size() != interpreter->adam_v().size())
      fail("state file {}: optimizer state of {} values, this rank updates {}", state_path,
           state.adam_m.size(), interpreter->adam_m().size());
    interpreter->adam_m() = std::move(state.adam_m);
    interpreter->adam_v() = std::move(state.adam_v);
    interpreter->parameters_changed();
    resume_loss_scaling(*interpreter, state, state_path);
    if (is_root()) fmt::print("resumed from {} at step {}\n", config.checkpoint_dir, step);
    return int(step);
  }
};

int choose_threads(const TrainConfig& config, const MpiCommunicator& comm) {
  if (config.threads > 0) return config.threads;
  if (std::getenv("OMP_NUM_THREADS")) return omp_get_max_threads();
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, comm.local_size()));
}

// Phase 1: the settings that can be refused before anything is built.
void check_settings(const TrainConfig& config) {
  (void)find_backend(config.device);  // refuses a backend this build lacks, by name
  if (config.keep_checkpoints < 0)
    fail("--keep-checkpoints {} must not be negative", config.keep_checkpoints);
  if (config.checkpoint_every < 0)
    fail("--checkpoint-every {} must not be negative", config.checkpoint_every);
  if (config.resume && config.checkpoint_dir.empty()) fail("--resume needs --checkpoint-dir");
  if (config.val_batches < 1) fail("--val-batches {} must be at least 1", config.val_batches);
  check_limit(fmt::format("--batch"), config.batch, limits::batch);
  check_limit(fmt::format("--seq"), config.seq, limits::sequence);
}

// Phase 2: the model, the plan and its schedule, this rank's place in it, and the thread count.
int resolve_plan(Run& run) {
  const TrainConfig& config = run.config;
  run.model = load_trainable_model(config.model, "train");
  run.plan = parse_plan(config.plan);
  require_runnable(run.plan, config.device == "cuda" ? ExecutorDevice::cuda : ExecutorDevice::cpu);
  check_job(run.plan, run.comm, config.steps);
  run.schedule = compile(run.model, run.plan, config.batch, config.seq);
  run.coord = rank_coord(run.plan, run.comm.rank());
  const int threads = choose_threads(config, run.comm);
  omp_set_num_threads(threads);
  // OpenBLAS runs sgemm on threads of its own: the same count, or a 1-thread run of a small
  // model spends more time in their wake-ups and yields than in its products.
  openblas_set_num_threads(threads);
  return threads;
}

// Phase 3 (rank 0): what is about to run.
void print_banner(const Run& run, const Backend& backend) {
  const TrainConfig& config = run.config;
  print_banner_head("fabtrain-exec train", run.model, run.plan, run.comm.size(),
                    run.schedule.microbatch, config.seq);
  fmt::print("  batch    {} x {} = {} per step, {}\n", counted(config.batch, "sequence"),
             counted(config.seq, "token"), counted(config.batch * config.seq, "token"),
             counted(config.steps, "step"));
  fmt::print("  optim    AdamW lr {} (warm-up {}, cosine to {}x) weight decay {} clip {} seed {}\n",
             config.lr, config.warmup, config.lr_min_fraction, config.weight_decay,
             config.grad_clip, config.seed);
  fmt::print("  data     {}\n", join(config.data));
  if (!config.val_data.empty())
    fmt::print("  val      {} ({} every {})\n", join(config.val_data),
               counted(config.val_batches, "batch"),
               counted(config.val_every > 0 ? config.val_every : config.steps, "step"));
  fmt::print("  device   {}\n", backend.banner);
  if (!config.init_from.empty()) fmt::print("  init     {}\n", config.init_from);
  if (!config.checkpoint_dir.empty())
    fmt::print(
        "  ckpt     {} every {}{}\n", config.checkpoint_dir,
        counted(config.checkpoint_every > 0 ? config.checkpoint_every : config.steps, "step"),
        config.resume ? ", resuming" : "");
  std::fflush(stdout);
}

// Phase 4: the run's frame, with the schedule's groups; its group of all ranks also carries our
// own bookkeeping (loss, records). A backend may play the schedule on its own communicator
// (NCCL), returned here (null: the schedule runs on MPI); bookkeeping stays on MPI.
std::unique_ptr<Communicator> set_up_groups(Run& run, const Backend& backend) {
  run.frame = std::make_unique<RunFrame>(run.comm, run.schedule, run.config.mpi_progress,
                                         run.config.timeout_s);
  std::unique_ptr<Communicator> device_comm =
      backend.make_communicator ? backend.make_communicator(run.comm) : nullptr;
  if (device_comm) {
    device_comm->set_groups(run.schedule.groups);
    device_comm->connect_peers(transfer_peers(run.schedule.ranks.at(run.comm.rank())));
  }
  return device_comm;
}

// Phase 5: the rank's stage, with its initial weights, and its data loaders (the first and the
// last stage read tokens).
void build_stage(Run& run, const Backend& backend) {
  const TrainConfig& config = run.config;
  const BlockRange blocks = stage_blocks(run.model, run.plan).at(run.coord.pp);
  std::unique_ptr<Gpt2Ops> ops = backend.make_ops();
  const StageMemory memory =
      stage_memory(run.model, run.plan, run.coord.pp, run.schedule.microbatch, config.seq);
  check_fits_host(host_need_bytes(memory, ops->host_memory()), run.comm.local_size());
  if (backend.device_memory) {
    const auto [free_bytes, total_bytes] = backend.device_memory();
    check_fits_device(device_need_bytes(memory), free_bytes, total_bytes);
  }
  run.stage =
      std::make_unique<Gpt2Stage>(run.model, blocks, run.plan.tp, run.coord.tp,
                                  run.schedule.microbatch, config.seq, run.plan.mb, std::move(ops));
  run.stage->set_recompute(run.plan.recompute);
  run.stage->load_full(config.init_from.empty()
                           ? init_full_parameters(run.model, config.seed)
                           : read_model_checkpoint(config.init_from, run.model));
  const bool needs_data = blocks.begin == 0 || blocks.end == block_count(run.model);
  if (needs_data) {
    run.train_data = std::make_unique<DataLoader>(expand_data_paths(config.data), config.seq,
                                                  run.model.vocab_size, config.seed, true);
    if (!config.val_data.empty())
      run.val_data = std::make_unique<DataLoader>(expand_data_paths(config.val_data), config.seq,
                                                  run.model.vocab_size, config.seed, false);
  }
  if (config.data.empty()) fail("--data: no training files given");
}

// Phase 6 (rank 0): the checkpoint directory, created and locked against a second run (a refusal
// ends every rank cleanly: run_agreed_step).
std::unique_ptr<CheckpointLock> lock_checkpoint_dir(const Run& run) {
  const std::string& dir = run.config.checkpoint_dir;
  if (dir.empty() || !run.is_root()) return nullptr;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("--checkpoint-dir {}: cannot create it: {}", dir, ec.message());
  auto lock = std::make_unique<CheckpointLock>(dir);
  if (!run.config.resume) refuse_earlier_checkpoints(dir);
  return lock;
}

// Phase 7: rank 0's run record with its header, the trace and the progress display; the clocks
// aligned when steps are timed (for the record or the trace).
void open_outputs(Run& run, int threads, const Backend& backend, int start_step) {
  const TrainConfig& config = run.config;
  const auto header = [&] {
    nlohmann::json header = to_json(run_header(run.model, run.plan, run.schedule.microbatch,
                                               run.comm, backend.description, threads, config.batch,
                                               config.seq, config.steps, start_step));
    header["lr"] = config.lr;
    header["seed"] = config.seed;
    return header;
  };
  run.frame->open_outputs(
      {config.record, config.trace, config.steps, config.print_every,
       double(config.batch) * config.seq, !config.record.empty() || !config.trace.empty()},
      header);
}

// Every rank's peak resident set so far (MiB as floats: exact to a MiB up to 16 TiB), for the
// run record: what the CPU executor's process held at most, the model's memory to compare with.
std::vector<double> gather_peak_resident_bytes(Run& run) {
  constexpr double kMiB = 1024.0 * 1024;
  const std::vector<float> mine{float(peak_resident_bytes().value_or(0) / kMiB)};
  std::vector<float> all(run.comm.size());
  {
    const WatchedWait watch = run.waiting("gathering the peak resident sets");
    run.comm.all_gather(run.frame->world_group(), mine, all);
  }
  std::vector<double> bytes;
  for (float mib : all) bytes.push_back(double(mib) * kMiB);
  return bytes;
}

// Phase 8: one training step, reported, validated when due, recorded and checkpointed when due.
void train_step(Run& run, const LrSchedule& lr, int step, bool last, TrainResult& result) {
  const TrainConfig& config = run.config;
  const auto play = [&](StepSummary& summary) {
    StepOutcome outcome =
        run.interpreter->play_step(step, lr.at(step), run.feed(run.train_data.get(), step));
    // The loss came with the gradient norm: every rank has the same, so all stop here together.
    // A norm that overflowed under loss scaling skipped the step at a smaller scale next time.
    if (outcome.skipped && run.is_root())
      fmt::print("step {}: the gradients overflowed at loss scale {:g}: step skipped, scale {:g}\n",
                 step + 1, outcome.loss_scale, outcome.loss_scale / 2);
    if (!std::isfinite(outcome.mean_loss) ||
        (!outcome.skipped && !std::isfinite(outcome.grad_norm)))
      fail(
          "step {}: the loss is {} and the gradient norm {}: training diverged (lower --lr, or "
          "resume from an earlier checkpoint); no checkpoint was written for this step",
          step, outcome.mean_loss, outcome.grad_norm);
    summary.loss = outcome.mean_loss;
    summary.lr = lr.at(step);
    summary.grad_norm = outcome.grad_norm;
    return std::move(outcome.timings);
  };
  const auto after = [&](StepSummary& summary) {
    result.losses.push_back(summary.loss);
    if (!config.val_data.empty() &&
        (last || (config.val_every > 0 && (step + 1) % config.val_every == 0))) {
      summary.val_loss = run.validate();
      result.final_val_loss = summary.val_loss;
    }
    if (config.device == "cpu") summary.peak_rss_bytes = gather_peak_resident_bytes(run);
  };
  const auto show = [](Progress& progress, const StepSummary& s) {
    progress.step(s.step, s.loss, s.tokens_per_s, s.wall_s, s.lr, s.grad_norm);
    if (s.val_loss >= 0) progress.validation(s.step, s.val_loss);
  };
  run.frame->step(step, play, after, show);
  if (!config.checkpoint_dir.empty() &&
      (last || (config.checkpoint_every > 0 && (step + 1) % config.checkpoint_every == 0)))
    run.save_checkpoint(step + 1);
}

}  // namespace

TrainResult train(const TrainConfig& config, MpiCommunicator& comm) {
  check_settings(config);
  if (launched_by_mpirun()) ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // orphans end with their launcher
  Run run{config, comm};
  const int threads = resolve_plan(run);
  const Backend backend = find_backend(config.device)
                              .make({config.precision, config.comm, comm.local_rank(),
                                     comm.local_size(), comm.host(), threads});
  if (run.is_root()) print_banner(run, backend);
  const std::unique_ptr<Communicator> device_comm = set_up_groups(run, backend);
  Communicator& schedule_comm = device_comm ? *device_comm : static_cast<Communicator&>(comm);
  run.frame->warn_overlap(schedule_comm);
  build_stage(run, backend);
  AdamW adamw;
  adamw.weight_decay = config.weight_decay;
  run.interpreter =
      std::make_unique<Interpreter>(run.model, run.schedule, comm.rank(), *run.stage, schedule_comm,
                                    adamw, config.grad_clip, &run.frame->watchdog());
  if (backend.loss_scaling) run.interpreter->set_loss_scaling({});
  std::unique_ptr<CheckpointLock> lock;
  {
    const WatchedWait watch = run.waiting("agreeing on the checkpoint folder's lock");
    run_agreed_step(comm, run.frame->world_group(), [&] { lock = lock_checkpoint_dir(run); });
  }
  int start_step = 0;
  if (config.resume) {
    {
      const WatchedWait watch = run.waiting("barrier before resuming");
      comm.barrier();
    }
    start_step = run.resume();
  }
  open_outputs(run, threads, backend, start_step);
  const LrSchedule lr{config.lr, config.warmup, config.steps, config.lr_min_fraction};
  TrainResult result;
  const int end_step =
      config.stop_after > 0 ? std::min(config.steps, start_step + config.stop_after) : config.steps;
  for (int step = start_step; step < end_step; ++step)
    train_step(run, lr, step, step + 1 == end_step, result);
  run.frame->finish();
  return result;
}

}  // namespace fabtrain
