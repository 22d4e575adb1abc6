// fabtrain-exec replay: play a plan's schedule with real communication and modelled compute (each
// fwd, bwd and optimizer sleeps for the simulator's time on --device-type), to measure full-size
// plans over real or emulated links without the model. Same flags as train where they mean the
// same; the run record is train's, with "mode": "replay" in its header.
#include <memory>

#include "command.hpp"
#include "exec/run/replay_run.hpp"

namespace fabtrain {
namespace {

Registration reg(15, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "replay", "Play a plan's schedule with real communication and modelled compute (no model)");
  auto c = std::make_shared<ReplayConfig>();
  cmd->add_option("--model", c->model, "Built-in model name or a Hugging Face config.json")
      ->capture_default_str();
  cmd->add_option("--plan", c->plan, "Plan, e.g. dp=2,tp=1,pp=2,mb=4,zero=1,schedule=1f1b")
      ->capture_default_str();
  cmd->add_option("--batch", c->batch, "Global batch in sequences (the same for every plan)")
      ->capture_default_str();
  cmd->add_option("--seq", c->seq, "Tokens per sequence")->capture_default_str();
  cmd->add_option("--steps", c->steps, "Steps to replay")->capture_default_str();
  cmd->add_option("--record", c->record, "Write the run record (JSON lines) here");
  cmd->add_option("--trace", c->trace, "Write the measured timeline (Chrome trace JSON) here");
  cmd->add_option("--timeout-s", c->timeout_s,
                  "End the job when one instruction blocks longer than this (0: never)")
      ->capture_default_str();
  cmd->add_option("--device-type", c->device_type,
                  "Catalog GPU type whose compute times the ranks sleep (e.g. GPU_RTX6000)")
      ->capture_default_str();
  cmd->add_option("--calibration", c->calibration,
                  "Calibration YAML (fabtrain calibrate) for compute");
  cmd->add_option("--mpi-progress", c->mpi_progress,
                  "How MPI's started transfers advance during compute: thread, test or none "
                  "(default: the measured best, docs/validation.md)")
      ->check(CLI::IsMember({"thread", "test", "none"}));
  cmd->add_option("--print-every", c->print_every,
                  "Plain progress line every N steps (no terminal)")
      ->capture_default_str();
  cmd->callback([c] {
    MpiCommunicator comm(nullptr, nullptr);
    try {
      replay(*c, comm);
    } catch (const std::exception& e) {
      if (comm.size() > 1) comm.abort(e.what());  // takes the other ranks down
      throw;
    }
  });
});

}  // namespace
}  // namespace fabtrain
