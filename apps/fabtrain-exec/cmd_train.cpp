// fabtrain-exec train: train GPT-2 under a plan, one process per rank (mpirun -np N, or alone as
// one rank). Options come from one table (CLI11) so the help cannot drift from the parser. An
// error on any rank ends the whole job with the message (MPI_Abort), never a hang; one the ranks
// agreed on (JobWideError) ends each rank normally.
#include <memory>

#include "command.hpp"
#include "common/error.hpp"
#include "exec/comm/mpi_communicator.hpp"
#include "exec/run/precision_option.hpp"
#include "exec/run/trainer.hpp"
#include "plan/executor_support.hpp"
#include "plan/plan.hpp"

namespace fabtrain {
namespace {

void run(TrainConfig config) {
  MpiCommunicator comm(nullptr, nullptr);
  try {
    // One precision: the plan's (--precision sets it), so the backend computes what is recorded.
    config.plan = plan_with_precision(config.plan, config.precision);
    config.precision = to_string(parse_plan(config.plan).precision);
    train(config, comm);
  } catch (const JobWideError&) {
    throw;  // every rank ends with it: main reports it once and exits 1
  } catch (const std::exception& e) {
    if (comm.size() > 1) comm.abort(e.what());  // takes the other ranks down
    throw;                                      // one rank: main prints it and exits 1
  }
}

Registration reg(10, [](CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train GPT-2 with a plan's schedule (CPU, MPI)");
  auto c = std::make_shared<TrainConfig>();
  cmd->add_option("--model", c->model, "Built-in model name or a Hugging Face config.json")
      ->capture_default_str();
  cmd->add_option("--plan", c->plan, "Plan, e.g. dp=2,tp=1,pp=2,mb=4,zero=1,schedule=1f1b")
      ->capture_default_str();
  cmd->add_option("--data", c->data,
                  "Training files: llm.c token .bin, or plain text (a byte per token: gpt2-nano); "
                  "lists, globs")
      ->required();
  cmd->add_option("--val-data", c->val_data, "Validation files (same forms as --data)");
  cmd->add_option("--batch", c->batch, "Global batch in sequences (the same for every plan)")
      ->capture_default_str();
  cmd->add_option("--seq", c->seq, "Tokens per sequence")->capture_default_str();
  cmd->add_option("--steps", c->steps, "Total training steps")->capture_default_str();
  cmd->add_option("--lr", c->lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--warmup", c->warmup, "Linear warm-up steps")->capture_default_str();
  cmd->add_option("--lr-min-fraction", c->lr_min_fraction, "Cosine decays to this fraction of --lr")
      ->capture_default_str();
  cmd->add_option("--weight-decay", c->weight_decay, "AdamW weight decay (2-D weights)")
      ->capture_default_str();
  cmd->add_option("--grad-clip", c->grad_clip, "Clip the global gradient norm to this (0: off)")
      ->capture_default_str();
  cmd->add_option("--seed", c->seed, "Seed of the initialisation and the data order")
      ->capture_default_str();
  cmd->add_option("--init-from", c->init_from, "Start from an llm.c model checkpoint");
  cmd->add_option("--checkpoint-dir", c->checkpoint_dir, "Write checkpoints here");
  cmd->add_option("--checkpoint-every", c->checkpoint_every,
                  "Checkpoint every N steps (0: only at the end)")
      ->capture_default_str();
  cmd->add_option("--keep-checkpoints", c->keep_checkpoints,
                  "Keep the N newest checkpoints (0: all)")
      ->capture_default_str();
  cmd->add_flag("--resume", c->resume, "Continue from the latest checkpoint in --checkpoint-dir");
  cmd->add_option("--stop-after", c->stop_after,
                  "End this run after N steps, checkpointing there (continue with --resume)")
      ->capture_default_str();
  cmd->add_option("--record", c->record, "Write the run record (JSON lines) here");
  cmd->add_option("--trace", c->trace, "Write the measured timeline (Chrome trace JSON) here");
  cmd->add_option("--val-every", c->val_every, "Validate every N steps (0: only at the end)")
      ->capture_default_str();
  cmd->add_option("--val-batches", c->val_batches, "Global batches per validation")
      ->capture_default_str();
  cmd->add_option("--device", c->device, "A built backend: cpu, or cuda when built with CUDA")
      ->capture_default_str();
  cmd->add_option("--comm", c->comm,
                  "cuda: nccl (one GPU per rank), mpi (ranks may share a GPU) or auto")
      ->capture_default_str();
  cmd->add_option("--mpi-progress", c->mpi_progress,
                  "How MPI's started transfers advance during compute: thread (a progress "
                  "thread), test (tests between blocks) or none (default: the measured best, "
                  "docs/validation.md)")
      ->check(CLI::IsMember({"thread", "test", "none"}));
  cmd->add_option("--precision", c->precision,
                  "Sets the plan's precision: fp32 (cpu, cuda); tf32 or bf16 (cuda, Ampere and "
                  "newer); fp16 (cuda, with dynamic loss scaling) (default: the plan's)");
  cmd->add_option("--timeout-s", c->timeout_s,
                  "End the job when one instruction blocks longer than this (0: never)")
      ->capture_default_str();
  cmd->add_option("--threads", c->threads, "OpenMP threads per rank (0: cores / ranks per host)")
      ->capture_default_str();
  cmd->add_option("--print-every", c->print_every,
                  "Plain progress line every N steps (no terminal)")
      ->capture_default_str();
  cmd->callback([c] { run(*c); });
});

}  // namespace
}  // namespace fabtrain
