#include "search_cli.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace fabtrain {

void SearchCli::add_to(CLI::App* cmd, bool with_slice) {
  cmd->add_option("--model", model, "Built-in model or a GPT-2 config.json")->capture_default_str();
  if (with_slice)
    cmd->add_option("--slice", slice, "Built-in slice name or slice YAML file")->capture_default_str();
  cmd->add_option("--batch", batch,
                  "Global batch in sequences (default: 8 per GPU of each plan, as in Alpa's GPT-2 "
                  "example that the study appears to follow)");
  cmd->add_option("--seq", seq, "Sequence length (default: the model's context)");
  cmd->add_option("--tokens", tokens, "Tokens to train, for time to train");
  cmd->add_option("--epochs", epochs, "Epochs over --dataset-tokens, for time to train");
  cmd->add_option("--dataset-tokens", dataset_tokens, "Tokens in the data set");
  cmd->add_option("--wan-latency-ms", wan_latency_ms,
                  "Override every inter-site round-trip latency (what-if)");
  cmd->add_option("--communicator", communicator,
                  "Communicator profile to assume (catalog communicators: nccl-socket, openmpi-tcp; "
                  "default: the slice's)");
  cmd->add_option("--calibration", calibration_file, "Calibration YAML from `fabtrain calibrate`");
  cmd->add_option("--catalog", catalog_file,
                  "Catalog YAML adding or replacing GPU types, NICs and sites (the built-in rules)");
  cmd->add_option("--precision", precision, "fp32, fp16 or bf16")->capture_default_str();
  cmd->add_option("--workers", workers, "Simulations at once, each in a process of its own (default: one per core)");
}

SearchSetup SearchCli::resolve() {
  SearchSetup setup{load_model(model), load_slice(slice, catalog_with(catalog_file)), {}};
  SearchOptions& options = setup.options;
  if (wan_latency_ms >= 0) override_wan_latency(setup.slice, wan_latency_ms / 1000);
  if (!communicator.empty()) use_communicator(setup.slice, communicator);
  communicator = setup.slice.communicator.name;  // what describe() reports as assumed
  if (!calibration_file.empty()) {
    calibration = load_calibration(calibration_file);
    options.calibration = &calibration;
  }
  if (batch < 0) fail("--batch={} must be positive", batch);
  if (seq < 0 || seq > setup.model.n_ctx)
    fail("--seq={} must be between 1 and the model's context {}", seq, setup.model.n_ctx);
  if ((epochs > 0) != (dataset_tokens > 0))
    fail("--epochs and --dataset-tokens go together (got epochs={}, dataset-tokens={})", epochs,
         dataset_tokens);
  options.space.global_batch = batch;
  options.space.seq = seq;
  options.space.precision = parse_precision(precision);
  options.workers = workers;
  options.train_tokens = train_tokens();
  return setup;
}

std::optional<double> SearchCli::train_tokens() const {
  if (tokens > 0) return tokens;
  if (epochs > 0 && dataset_tokens > 0) return epochs * dataset_tokens;
  return std::nullopt;
}

std::string SearchCli::describe() const {
  return fmt::format("model={} slice={} communicator={} batch={} seq={} precision={}{}{}{}", model, slice,
                     communicator.empty() ? "the slice's" : communicator,
                     batch > 0 ? std::to_string(batch) : "8/GPU", seq > 0 ? std::to_string(seq) : "context",
                     precision, wan_latency_ms >= 0 ? fmt::format(" wan-latency={}ms", wan_latency_ms) : "",
                     train_tokens() ? fmt::format(" tokens={:.3g}", *train_tokens()) : "",
                     calibration_file.empty() ? " calibration=catalog defaults"
                                              : " calibration=" + calibration_file);
}

std::string format_duration(double s) {
  if (s <= 0) return "-";
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 7200) return fmt::format("{:.0f} min", s / 60);
  if (s < 2 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} d", s / 86400);
}

std::string format_gib(double bytes) { return fmt::format("{:.1f}", bytes / (1024.0 * 1024 * 1024)); }

std::string exec_command(const ModelSpec& model, const Evaluated& e, int seq) {
  Plan plan = e.candidate.plan;
  return fmt::format("mpirun -np {} fabtrain-exec train --model {} --plan {} --batch {} --seq {} "
                     "--data TRAIN_TOKENS.bin",
                     plan.ranks(), model.name, to_string(plan), e.candidate.global_batch,
                     seq > 0 ? seq : model.n_ctx);
}

}  // namespace fabtrain
