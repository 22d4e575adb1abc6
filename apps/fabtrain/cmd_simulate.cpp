// fabtrain simulate: predict one plan's step time, throughput, breakdown and memory on a slice
// with the SimGrid simulator (sim/), and optionally write JSON and a Chrome trace.
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <optional>

#include "calibrate/merge_calibrations.hpp"
#include "command.hpp"
#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "common/text_table.hpp"
#include "models/model_spec.hpp"
#include "plan/default_batch.hpp"
#include "plan/schedule.hpp"
#include "platforms/slice.hpp"
#include "say.hpp"
#include "search_cli.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/sim_report.hpp"
#include "sim/simulator.hpp"

namespace fabtrain {
namespace {

struct SimulateOptions {
  std::string model, slice, plan, catalog, json, trace, communicator;
  std::vector<std::string> calibration;
  int batch = 0, seq = 0;
  double wan_latency_ms = -1;
  double tokens = 0, epochs = 0, dataset_tokens = 0;
  double memory_headroom = 0.10;
};

void write_text(const std::string& path, const std::string& text) {
  if (path == "-") {
    fmt::print("{}\n", text);
    return;
  }
  write_text_atomically(path, text + "\n");
}

void run(const SimulateOptions& o) {
  const ModelSpec model = load_model(o.model);
  Slice slice = load_slice(o.slice, catalog_with(o.catalog));
  if (o.wan_latency_ms >= 0) override_wan_latency(slice, o.wan_latency_ms / 1000);
  if (!o.communicator.empty()) use_communicator(slice, o.communicator);
  const Plan plan = parse_plan(o.plan);
  if (plan.ranks() > slice.gpu_count())
    fail("plan {} needs {} GPUs but slice '{}' has {}", to_string(plan), plan.ranks(), slice.name,
         slice.gpu_count());
  const int batch = o.batch > 0 ? o.batch : default_global_batch(plan);
  const int seq = o.seq > 0 ? o.seq : model.n_ctx;
  if (seq > model.n_ctx) fail("--seq {} exceeds {}'s context of {}", seq, model.name, model.n_ctx);
  std::optional<double> train_tokens;
  if (o.tokens > 0 && o.epochs > 0)
    fail("give --tokens or --epochs with --dataset-tokens, not both");
  if (o.tokens > 0) train_tokens = o.tokens;
  if (o.epochs > 0) {
    if (!(o.dataset_tokens > 0)) fail("--epochs {} needs --dataset-tokens", o.epochs);
    train_tokens = o.epochs * o.dataset_tokens;
  }
  Calibration calibration;
  if (!o.calibration.empty()) {
    calibration = calib::load_calibrations(o.calibration, "--calibration");
    print_calibration_warnings(calibration, slice);
  }
  check_memory_headroom(o.memory_headroom);

  // Resolved configuration first, on stderr when JSON goes to stdout.
  auto* info = o.json == "-" ? stderr : stdout;
  const int width = table_width(false);
  say(width, info, "model        {} ({} parameters)\n", model.name, model.parameters());
  say(width, info, "slice        {} ({}, sites: {})\n", slice.name,
      counted(slice.gpu_count(), "GPU"), fmt::join(slice.site_names(), ", "));
  say(width, info, "communicator {} ({}; {} per peer{}{}{})\n", slice.communicator.name,
      slice.communicator.library, counted(slice.communicator.streams_per_peer, "stream"),
      slice.communicator.max_in_flight_bytes > 0
          ? fmt::format(", at most {:.3g} MiB in flight each",
                        slice.communicator.max_in_flight_bytes / (1 << 20))
          : "",
      slice.communicator.eager_limit_bytes > 0
          ? fmt::format(", rendezvous over {:.0f} KiB", slice.communicator.eager_limit_bytes / 1024)
          : "",
      slice.communicator.started_reduce_scatter_via_root
          ? ", started reduce-scatter via rank 0 (reduce, then scatter)"
          : "");
  say(width, info, "plan         {} ({})\n", to_string(plan), technique_name(plan));
  say(width, info, "batch        {} sequences of {} tokens{}\n", batch, seq,
      o.batch > 0 ? "" : " (default: 8 per GPU of the plan, rounded up to a multiple of dp*mb)");
  if (o.wan_latency_ms >= 0)
    say(width, info, "wan latency  {} ms round trip (override)\n", o.wan_latency_ms);
  say(width, info, "calibration  {}\n\n",
      o.calibration.empty() ? "none (catalog defaults)" : calibration_names(o.calibration));

  const Schedule schedule = compile(model, plan, batch, seq);
  Simulator simulator(slice);
  SimOptions options;
  options.calibration = &calibration;
  options.trace = !o.trace.empty();
  const SimResult result = simulator.run(model, schedule, options);
  say(width, info, "{}", human_summary(result, schedule, train_tokens, o.memory_headroom));
  if (!o.json.empty())
    write_text(o.json, result_json(result, schedule, model, slice, train_tokens).dump(2));
  if (!o.trace.empty()) write_text(o.trace, chrome_trace_json(result, schedule).dump());
}

Registration reg(40, [](CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate",
                                 "Predict step time, throughput and memory of a plan on a slice");
  cmd->add_option("--model", o->model, "Built-in model name or Hugging Face config.json")
      ->required();
  cmd->add_option("--slice", o->slice, "Built-in slice name or slice YAML file")->required();
  cmd->add_option("--plan", o->plan, "Plan, e.g. dp=2,pp=2,mb=8")->required();
  cmd->add_option("--batch", o->batch,
                  "Global batch in sequences (default: 8 per GPU of the plan, as in Alpa's GPT-2 "
                  "example that the study appears to follow, rounded up to a multiple of dp*mb)");
  cmd->add_option("--seq", o->seq, "Sequence length (default: the model's context)");
  cmd->add_option("--wan-latency-ms", o->wan_latency_ms,
                  "Override every inter-site round-trip latency, in ms");
  add_calibration_option(cmd, o->calibration);
  cmd->add_option("--communicator", o->communicator,
                  "Communicator profile (catalog communicators: nccl-socket, openmpi-tcp; default: "
                  "the slice's)");
  cmd->add_option("--catalog", o->catalog,
                  "Catalog YAML adding or replacing GPU types, NICs and sites");
  cmd->add_option("--json", o->json, "Write the result as JSON to FILE, or - for stdout");
  cmd->add_option("--trace", o->trace, "Write a Chrome trace (Perfetto) to FILE");
  cmd->add_option("--tokens", o->tokens, "Tokens to train, for the time to train");
  cmd->add_option("--epochs", o->epochs, "Epochs over --dataset-tokens, for the time to train");
  cmd->add_option("--dataset-tokens", o->dataset_tokens, "Tokens in one epoch of the data set");
  add_memory_headroom_option(cmd, o->memory_headroom);
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
