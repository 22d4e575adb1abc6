// fabtrain-exec bench: measure this machine (or these machines, under mpirun) for calibration:
// matrix products of a model's shapes, element-wise memory bandwidth, point-to-point latency and
// bandwidth per pair of ranks, and collective bus bandwidths; rank 0 writes one JSON file for
// `fabtrain calibrate --bench`. Options come from one table (CLI11).
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "command.hpp"
#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "exec/measure/bench_run.hpp"
#include "exec/measure/bench_table.hpp"
#include "json_output.hpp"

namespace fabtrain {
namespace {

void run(BenchConfig& config) {
  MpiCommunicator comm(nullptr, nullptr);
  const JsonOutput json{config.output};
  config.text = json.text();
  try {
    const nlohmann::json doc = run_bench(config, comm);
    if (comm.rank() == 0) {
      fmt::print(config.text, "{}", bench_table(doc));
      json.write(doc);
      if (!json.to_stdout()) fmt::print("  wrote {}\n", config.output);
    }
  } catch (const std::exception& e) {
    if (comm.size() > 1) comm.abort(e.what());
    throw;
  }
}

Registration reg(20, [](CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure compute, memory and network for calibration");
  auto c = std::make_shared<BenchConfig>();
  cmd->add_option("--device", c->device, "cpu (cuda: with the CUDA backend)")
      ->capture_default_str();
  cmd->add_option("--model", c->model,
                  "Model whose matrix shapes are measured (name or config.json)")
      ->capture_default_str();
  cmd->add_option("--batch", c->batch, "Sequences per microbatch on one rank (B)")
      ->capture_default_str();
  cmd->add_option("--seq", c->seq, "Tokens per sequence (T)")->capture_default_str();
  cmd->add_option("--threads", c->threads, "OpenMP threads per rank (0: cores / ranks per host)")
      ->capture_default_str();
  cmd->add_option("--budget-s", c->budget_s, "Time budget per measurement, seconds")
      ->capture_default_str();
  cmd->add_option("--memory-mib", c->memory_mib, "Array size of the memory kernels, MiB")
      ->capture_default_str();
  cmd->add_option("--latency-bytes", c->latency_bytes, "Message size of the latency ping-pong")
      ->capture_default_str();
  cmd->add_option(
         "--message-bytes", c->message_bytes,
         "More message sizes whose one-way time is measured by ping-pong (the model's pipeline "
         "activation, batch x seq x hidden floats, always is)")
      ->delimiter(',');
  cmd->add_option("--p2p-mib", c->p2p_mib, "Message size of the bandwidth stream, MiB")
      ->capture_default_str();
  cmd->add_option("--p2p-messages", c->p2p_messages, "Messages per bandwidth stream")
      ->capture_default_str();
  cmd->add_option("--tcp-streams", c->tcp_streams,
                  "Also TCP bandwidth per pair over plain sockets, with 1 and this many streams "
                  "(as the probe)")
      ->capture_default_str();
  cmd->add_option("--tcp-mib", c->tcp_mib, "MiB per TCP bandwidth measurement")
      ->capture_default_str();
  cmd->add_option("--collective-mib", c->collective_mib, "Collective buffer sizes, MiB")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--plan", c->plan,
                  "Also measure the collectives over each kind of this plan's groups (tp, dp, tied "
                  "embedding), all groups of a kind at once; its ranks must be the bench's");
  cmd->add_option("-o,--output,--json", c->output,
                  "The bench file to write (JSON), or - for standard output alone (the table goes "
                  "to standard error)")
      ->type_name("FILE|-")
      ->capture_default_str();
  cmd->callback([c] { run(*c); });
});

}  // namespace
}  // namespace fabtrain
