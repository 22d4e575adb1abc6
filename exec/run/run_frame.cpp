// The frame train and replay share (see run_frame.hpp).
#include "exec/run/run_frame.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/host_info.hpp"
#include "common/human_units.hpp"

namespace fabtrain {

int world_group(const Schedule& schedule, int rank) {
  const int g = schedule.group_of(rank, GroupKind::world);
  if (g < 0) fail("rank {}: the schedule has no group of all ranks", rank);
  return g;
}

void print_banner_head(const std::string& title, const ModelSpec& model, const Plan& plan,
                       int ranks, int microbatch, int seq) {
  fmt::print("{}\n", title);
  fmt::print("  model    {} (L={} C={} NH={} maxT={} V={}, {} parameters)\n", model.name,
             model.n_layer, model.n_embd, model.n_head, model.n_ctx, model.vocab_size,
             model.parameters());
  fmt::print("  plan     {} ({}), {}, microbatch {} x {} tokens\n", to_string(plan),
             technique_name(plan), counted(ranks, "rank"), microbatch, seq);
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

void RunOutputs::step(const StepSummary& summary, const Schedule& schedule,
                      const StepTimings& timings, double step_start_s) {
  if (record) record->step(summary, schedule, timings);
  if (trace) trace->add_step(summary.step, step_start_s, schedule, timings);
}

void RunOutputs::finish(const std::string& trace_path) {
  if (trace) trace->write(trace_path);
  progress.reset();
}

RunOutputs open_run_outputs(bool root, const std::string& record_path,
                            const std::function<nlohmann::json()>& header,
                            const std::string& trace_path, int ranks, int steps, int print_every) {
  RunOutputs out;
  if (!root) return out;
  if (!record_path.empty()) {
    out.record = std::make_unique<RunRecord>(record_path);
    out.record->header(header());
  }
  if (!trace_path.empty()) out.trace = std::make_unique<ChromeTrace>(ranks);
  out.progress = std::make_unique<Progress>(steps, print_every);
  return out;
}

}  // namespace fabtrain
