// JSON, Chrome trace and terminal text of a simulation result.
#include "sim/sim_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "common/error.hpp"
#include "common/human_units.hpp"
#include "plan/chrome_trace.hpp"
#include "sim/memory.hpp"

namespace fabtrain {

namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

nlohmann::json breakdown_json(const Breakdown& b) {
  return {{"compute_s", b.compute_s},
          {"exposed_comm_s", b.exposed_comm_s},
          {"bubble_s", b.bubble_s},
          {"communication_s", b.communication_s}};
}

}  // namespace

double time_to_train_s(const SimResult& result, double tokens) {
  if (!(tokens > 0)) fail("tokens to train {} must be positive", tokens);
  if (!(result.tokens_per_s > 0)) fail("the simulated step has no throughput");
  return tokens / result.tokens_per_s;
}

nlohmann::json result_json(const SimResult& result, const Schedule& schedule,
                           const ModelSpec& model, const Slice& slice,
                           std::optional<double> train_tokens) {
  nlohmann::json j;
  j["step_time_s"] = result.step_time_s;
  j["tokens_per_s"] = result.tokens_per_s;
  j["tflops_per_gpu"] = result.tflops_per_gpu;
  j["mfu"] = result.mfu;
  j["breakdown"] = breakdown_json(result.breakdown);
  j["critical_rank"] = result.critical_rank;
  auto ranks = nlohmann::json::array();
  for (size_t r = 0; r < result.ranks.size(); ++r) {
    const auto& rr = result.ranks[r];
    const auto& m = result.memory.ranks[r];
    ranks.push_back({{"rank", rr.rank},
                     {"gpu", rr.gpu},
                     {"site", rr.site},
                     {"finish_s", rr.finish_s},
                     {"breakdown", breakdown_json(rr.breakdown)},
                     {"peak_memory_bytes", rr.peak_memory_bytes},
                     {"memory_capacity_bytes", rr.memory_capacity_bytes},
                     {"memory",
                      {{"static_bytes", m.static_bytes},
                       {"weights_bytes", m.weights_bytes},
                       {"gradient_bytes", m.gradient_bytes},
                       {"optimizer_bytes", m.optimizer_bytes},
                       {"activation_bytes", m.activation_bytes},
                       {"buffer_bytes", m.buffer_bytes},
                       {"workspace_bytes", m.workspace_bytes},
                       {"allocator_slack_bytes", m.slack_bytes},
                       {"context_bytes", m.context_bytes},
                       {"comm_buffer_bytes", m.comm_buffer_bytes},
                       {"framework_bytes", m.framework_bytes}}}});
  }
  j["ranks"] = ranks;
  j["oom"] = result.oom;
  if (result.oom) {
    j["oom_rank"] = result.memory.worst_rank;
    j["oom_excess_bytes"] = result.memory.worst_excess;
  }
  j["plan"] = to_string(schedule.plan);
  j["model"] = model.name;
  j["slice"] = slice.name;
  j["batch"] = schedule.global_batch;
  j["seq"] = schedule.seq;
  if (train_tokens) {
    j["train_tokens"] = *train_tokens;
    j["time_to_train_s"] = time_to_train_s(result, *train_tokens);
  }
  return j;
}

nlohmann::json chrome_trace_json(const SimResult& result, const Schedule& schedule) {
  std::vector<std::string> labels(schedule.world);
  for (const auto& rr : result.ranks)
    if (rr.rank >= 0 && rr.rank < schedule.world)
      labels[rr.rank] = fmt::format("{} at {}", rr.gpu, rr.site);
  return chrome_trace(schedule, result.trace, labels);
}

std::string memory_terms(const RankMemory& m) {
  auto gib = [](double bytes) { return bytes / GiB; };
  return fmt::format(
      "{:.2f} GiB = weights {:.2f} + gradients {:.2f} + optimizer {:.2f} + activations at the "
      "peak {:.2f} + buffers in flight {:.2f} + framework {:.2f} (CUDA context {:.2f}, cuBLAS "
      "workspace {:.2f}, allocator slack {:.2f}, communicator buffers {:.2f})",
      gib(m.peak_bytes()), gib(m.weights_bytes), gib(m.gradient_bytes), gib(m.optimizer_bytes),
      gib(m.activation_bytes), gib(m.buffer_bytes), gib(m.framework_bytes), gib(m.context_bytes),
      gib(m.workspace_bytes), gib(m.slack_bytes), gib(m.comm_buffer_bytes));
}

std::string human_summary(const SimResult& result, const Schedule& schedule,
                          std::optional<double> train_tokens, double memory_headroom) {
  std::string out;
  const auto& b = result.breakdown;
  const double step = result.step_time_s;
  auto share = [&](double x) { return step > 0 ? 100 * x / step : 0.0; };
  out += fmt::format("step time        {:.4f} s\n", step);
  out += fmt::format("throughput       {:.0f} tokens/s\n", result.tokens_per_s);
  out += fmt::format("TFLOP/s per GPU  {:.2f} (Alpa's formula{})\n", result.tflops_per_gpu,
                     schedule.plan.recompute ? ", with recomputation" : "");
  out += fmt::format("MFU              {:.1f} %\n", 100 * result.mfu);
  out += fmt::format(
      "breakdown (rank {}): compute {:.4f} s ({:.0f}%), exposed communication {:.4f} s "
      "({:.0f}%), pipeline bubble {:.4f} s ({:.0f}%)\n",
      result.critical_rank, b.compute_s, share(b.compute_s), b.exposed_comm_s,
      share(b.exposed_comm_s), b.bubble_s, share(b.bubble_s));
  out += fmt::format(
      "communication    {:.4f} s in flight, {:.4f} s exposed ({:.0f}% hidden behind compute)\n",
      b.communication_s, b.exposed_comm_s,
      b.communication_s > 0 ? 100 * std::max(0.0, 1 - b.exposed_comm_s / b.communication_s) : 0.0);
  if (train_tokens)
    out += fmt::format("time to train    {} for {:.4g} tokens ({} GPU-hours)\n",
                       format_train_time(time_to_train_s(result, *train_tokens)), *train_tokens,
                       format_gpu_hours(time_to_train_s(result, *train_tokens) *
                                        double(result.ranks.size()) / 3600));
  out += "peak memory per GPU:\n";
  for (const auto& rr : result.ranks)
    out += fmt::format("  rank {:>4} {:<14} {:<10} {:7.2f} GiB of {:6.2f} GiB{}\n", rr.rank, rr.gpu,
                       rr.site, rr.peak_memory_bytes / GiB, rr.memory_capacity_bytes / GiB,
                       rr.peak_memory_bytes > rr.memory_capacity_bytes ? "  <- over" : "");
  if (result.memory.worst_rank >= 0)
    out += fmt::format("  rank {}: {}\n", result.memory.worst_rank,
                       memory_terms(result.memory.ranks[result.memory.worst_rank]));
  const double free = least_free_fraction(result.memory);
  if (result.oom) {
    const auto& w = result.ranks[result.memory.worst_rank];
    out += fmt::format(
        "OUT OF MEMORY: rank {} ({} at {}) needs {:.2f} GiB of {:.2f} GiB ({:.2f} GiB over)\n",
        w.rank, w.gpu, w.site, w.peak_memory_bytes / GiB, w.memory_capacity_bytes / GiB,
        result.memory.worst_excess / GiB);
  } else if (free < memory_headroom) {
    out += fmt::format(
        "memory: TIGHT: fits, but leaves {:.0f}% of a GPU free, less than the {:g}% asked "
        "(--memory-headroom)\n",
        100 * free, 100 * memory_headroom);
  } else {
    out += fmt::format("memory: fits on every GPU, at least {:.0f}% free\n", 100 * free);
  }
  return out;
}

}  // namespace fabtrain
