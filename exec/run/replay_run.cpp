// One rank's replay run (see replay_run.hpp).
#include "exec/run/replay_run.hpp"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "common/error.hpp"
#include "common/host_info.hpp"
#include "common/human_units.hpp"
#include "exec/play/replay.hpp"
#include "exec/run/run_frame.hpp"
#include "models/model_spec.hpp"
#include "platforms/catalog.hpp"

namespace fabtrain {

namespace {

const GpuType& gpu_type(const std::string& name) {
  try {
    return builtin_catalog().gpu(name);  // names the known types when it is not one
  } catch (const Error& e) {
    fail("--device-type {}: {}", name, e.what());
  }
}

double gib(double bytes) { return bytes / double(1 << 30); }

// This machine's identity for memory: ranks whose hosts share a boot id share one memory, even
// when the launcher calls them different hosts (the emulated sites are namespaces of one machine).
float machine_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return float(std::hash<std::string>{}(id)&0xFFFFFF);  // exact in a float
}

// Every rank's need is summed per machine before any allocates; a rank whose machine is short
// takes the job down by name, instead of the kernel's OOM killer taking one rank mid-step.
void check_memory(const Schedule& schedule, MpiCommunicator& comm, int world_group) {
  const float mine[2] = {machine_id(),
                         float(replay_memory(schedule, comm.rank()).total() / (1 << 20))};
  std::vector<float> all(2 * std::size_t(comm.size()));
  comm.all_gather(world_group, mine, all);
  double need_mib = 0;
  int ranks_here = 0;
  for (int r = 0; r < comm.size(); ++r)
    if (all[2 * r] == mine[0]) need_mib += all[2 * r + 1], ++ranks_here;
  const double available = host_available_memory_bytes();
  const bool short_here = available > 0 && need_mib * (1 << 20) > available;
  float short_ranks[1] = {short_here ? 1.0f : 0.0f};
  comm.all_reduce(world_group, short_ranks);
  if (short_here)
    fail(
        "replay of plan {} needs {:.2f} GiB for the {} on this machine ({}), which has {:.2f} "
        "GiB available: use fewer ranks per machine or a smaller model",
        to_string(schedule.plan), need_mib / 1024, counted(ranks_here, "rank"), comm.host(),
        gib(available));
  if (short_ranks[0] > 0) {
    std::this_thread::sleep_for(
        std::chrono::seconds(2));  // let the short rank's message come first
    fail("replay of plan {}: another rank's machine has too little memory",
         to_string(schedule.plan));
  }
}

void print_banner(const ReplayConfig& config, const ModelSpec& model, const Schedule& schedule,
                  const MpiCommunicator& comm, const GpuType& gpu) {
  const Plan& plan = schedule.plan;
  const ReplayMemory memory = replay_memory(schedule, comm.rank());
  print_banner_head("fabtrain-exec replay (communication real, compute modelled)", model, plan,
                    comm.size(), schedule.microbatch, config.seq);
  fmt::print("  batch    {} x {}, {}\n", counted(config.batch, "sequence"),
             counted(config.seq, "token"), counted(config.steps, "step"));
  fmt::print("  compute  sleeps as {} at {} ({})\n", gpu.name, to_string(plan.precision),
             config.calibration.empty() ? "catalog defaults" : "calibration " + config.calibration);
  fmt::print(
      "  memory   rank 0 needs {:.2f} GiB: buffer {:.2f}, send copies {:.2f}, library {:.2f}, in "
      "flight {:.2f}\n",
      gib(memory.total()), gib(memory.buffer), gib(memory.send_copies), gib(memory.library),
      gib(memory.in_flight));
  std::fflush(stdout);
}

// The run record's header: the common fields, then the replay's own.
nlohmann::json record_header(const ReplayConfig& config, const ModelSpec& model,
                             const Schedule& schedule, const MpiCommunicator& comm,
                             const GpuType& gpu, const Calibration& calibration) {
  const Plan& plan = schedule.plan;
  nlohmann::json header =
      to_json(run_header(model, plan, schedule.microbatch, comm, "replay:" + gpu.name, 1,
                         config.batch, config.seq, config.steps, 0));
  header["mode"] = "replay";
  header["device_type"] = gpu.name;
  header["precision"] = to_string(plan.precision);
  header["calibration"] = config.calibration.empty() ? "none" : config.calibration;
  std::vector<double> per_rank;
  for (int r = 0; r < comm.size(); ++r) per_rank.push_back(replay_memory(schedule, r).total());
  header["memory_per_rank_bytes"] = per_rank;
  // The seconds each instruction sleeps, per rank (0 for communication): what the measured
  // compute durations are checked against.
  nlohmann::json modelled = nlohmann::json::array();
  for (int r = 0; r < comm.size(); ++r)
    modelled.push_back(modelled_seconds(schedule, r, gpu, builtin_catalog().compute, calibration));
  header["modelled_s"] = modelled;
  return header;
}

}  // namespace

std::vector<double> replay(const ReplayConfig& config, MpiCommunicator& comm) {
  const ModelSpec model = load_model(config.model);
  const Plan plan = parse_plan(config.plan);
  check_job(plan, comm, config.steps);
  const GpuType& gpu = gpu_type(config.device_type);
  const Calibration calibration =
      config.calibration.empty() ? Calibration{} : load_calibration(config.calibration);
  const Schedule schedule = compile(model, plan, config.batch, config.seq);
  peak_flops(gpu, plan.precision);  // a GPU without the plan's precision is refused here, by name

  RunFrame frame(comm, schedule, config.mpi_progress, config.timeout_s);
  check_memory(schedule, comm, frame.world_group());
  frame.warn_overlap(comm);
  if (frame.root()) print_banner(config, model, schedule, comm, gpu);

  Replayer replayer(schedule, comm.rank(), comm, gpu, builtin_catalog().compute, calibration,
                    &frame.watchdog());
  const auto header = [&] {
    return record_header(config, model, schedule, comm, gpu, calibration);
  };
  frame.open_outputs({config.record, config.trace, config.steps, config.print_every,
                      double(config.batch) * config.seq, true},
                     header);
  const auto show = [](Progress& progress, const StepSummary& s) {
    progress.timing_step(s.step, s.tokens_per_s, s.wall_s);
  };
  std::vector<double> walls;
  for (int step = 0; step < config.steps; ++step) {
    const auto play = [&](StepSummary&) { return replayer.play_step(step); };
    walls.push_back(frame.step(step, play, nullptr, show).wall_s);
  }
  frame.finish();
  return walls;
}

}  // namespace fabtrain
