// The calibration pipeline, phase by phase (see pipeline.hpp).
#include "calibrate/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "calibrate/fit_collectives.hpp"
#include "calibrate/fit_compute.hpp"
#include "calibrate/fit_links.hpp"
#include "calibrate/fit_steps.hpp"
#include "calibrate/inputs.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "platforms/catalog.hpp"
#include "platforms/slice.hpp"

namespace fabtrain::calib {
namespace {

std::string percent(double predicted, double measured) {
  return measured > 0 ? fmt::format("{:+.1f}%", 100 * (predicted - measured) / measured) : "-";
}

class Pipeline {
 public:
  Pipeline(const CalibrationRequest& request, std::FILE* out)
      : o_(request),
        out_(out),
        catalog_(builtin_catalog()),
        device_(catalog_.gpu(o_.device_type)),
        link_class_(catalog_.link_class(o_.link_class)),
        comm_(catalog_.communicator(o_.communicator)) {
    if (o_.benches.empty()) fail("--bench: give at least one bench file (fabtrain-exec bench)");
    if (!o_.run_path_rtt_ms.empty() && o_.run_path_rtt_ms.size() != o_.runs.size())
      fail("--run-path-rtt-ms has {} values for {} --runs: give one per run, in order",
           o_.run_path_rtt_ms.size(), o_.runs.size());
    if (!o_.bench_path_rtt_ms.empty() && o_.bench_path_rtt_ms.size() != o_.benches.size())
      fail("--bench-path-rtt-ms has {} values for {} --bench: give one per bench, in order",
           o_.bench_path_rtt_ms.size(), o_.benches.size());
    if (!o_.fit_steps_slice.empty() && o_.runs.empty()) fail("--fit-steps needs --runs to fit to");
    for (double ms : o_.bench_path_rtt_ms) per_bench_s_.push_back(ms / 1e3);
  }

  CalibrationOutcome run() {
    read_inputs();
    fit_compute();
    if (!runs_.empty() && !o_.keep_compute) refine_compute_on_runs();
    if (!kinds_.empty()) cal_.compute[device_.name] = kinds_;
    fit_link();
    if (!o_.intra_vm_bench.empty()) fit_intra_vm_link();
    if (link_.measured) record_link();
    if (o_.fit_collectives) fit_collective_corrections();
    if (!o_.fit_steps_slice.empty()) fit_steps();
    CalibrationOutcome outcome{
        cal_,
        {"Written by fabtrain calibrate; read by fabtrain simulate --calibration.",
         "device " + device_.name + ", link class " + link_class_.name}};
    for (const auto& b : o_.benches) outcome.comments.push_back("bench " + b);
    for (const auto& r : o_.runs) outcome.comments.push_back("run " + r);
    return outcome;
  }

 private:
  // The round trip each bench's and each run's path added (a run's default: the first bench's).
  double bench_rtt_s(std::size_t bench) const {
    return per_bench_s_.empty() ? (bench == 0 ? o_.path_rtt_ms / 1e3 : 0.0) : per_bench_s_[bench];
  }
  double run_rtt_s(std::size_t run) const {
    return o_.run_path_rtt_ms.empty() ? bench_rtt_s(0) : o_.run_path_rtt_ms[run] / 1e3;
  }

  void read_inputs() {
    fmt::print(
        out_,
        "fabtrain calibrate\n  device   {} (peak fp32 {:.3g} GFLOP/s, memory {:.3g} GB/s, {})\n",
        device_.name, device_.peak_fp32_flops / 1e9, device_.memory_bandwidth / 1e9, catalog_.path);
    fmt::print(out_, "  link     {}, communicator {} ({} streams per peer)\n", link_class_.name,
               comm_.name, comm_.streams_per_peer);
    for (const auto& path : o_.benches) {
      benches_.push_back(read_bench(path));
      const auto& b = benches_.back();
      fmt::print(out_, "  bench    {}: {} ranks on {}, {} threads, model {} B={} T={}\n", path,
                 b.world, b.device, b.threads, b.model, b.batch, b.seq);
    }
    for (const auto& path : o_.runs) {
      runs_.push_back(read_run_record(path));
      const auto& r = runs_.back();
      fmt::print(out_, "  run      {}: {} ranks, model {}, plan {}, {} timed steps\n", path,
                 r.world, r.model, r.plan, r.steps.size());
    }
  }

  void print_kinds() const {
    for (const auto& [kind, c] : kinds_)
      fmt::print(out_, "  {:<9} matmul {:>7}  memory {:>7}  overhead {}\n", to_string(kind),
                 c.matmul_efficiency ? fmt::format("{:.4f}", *c.matmul_efficiency) : "-",
                 c.memory_efficiency ? fmt::format("{:.4f}", *c.memory_efficiency) : "-",
                 c.kernel_overhead_s ? fmt::format("{:.3g} s", *c.kernel_overhead_s) : "-");
  }

  void fit_compute() {
    if (o_.keep_compute) {
      fmt::print(out_,
                 "\ncompute: the catalog's (--keep-compute: the runs' compute was modelled, not "
                 "measured)\n");
      return;
    }
    std::vector<std::string> notes;
    kinds_ = fit_compute_from_bench(benches_.front(), device_, notes);
    fmt::print(out_, "\ncompute from bench ({}):\n", benches_.front().path);
    for (const auto& n : notes) fmt::print(out_, "  {}\n", n);
    print_kinds();
  }

  void refine_compute_on_runs() {
    std::vector<LinearFit> fits;
    const KindCalibration bench_kinds = kinds_;
    kinds_ = fit_compute_from_runs(runs_, device_, bench_kinds, &fits);
    fmt::print(out_, "\ncompute refined by least squares on {}:\n", counted(runs_.size(), "run"));
    for (const auto& f : fits)
      fmt::print(out_,
                 "  {} samples: t = {:.4g} s/{} + {:.3g} s/block, rms relative residual {:.1f}%\n",
                 f.samples, f.slope, f.form == "flops" ? "FLOP" : "byte", f.per_block_s,
                 100 * f.rms_relative);
    print_kinds();
    const std::optional<double> held_out = print_run_errors(bench_kinds);
    // Plan reports plans this close to the best as a tie.
    if (held_out) cal_.held_out_step_error = *held_out;
  }

  void print_error(const RunError& e, const char* label) const {
    fmt::print(out_, "  {:<9} step {:>9.4f} s predicted {:>9.4f} s ({})", label, e.measured_step_s,
               e.predicted_step_s, percent(e.predicted_step_s, e.measured_step_s));
    for (const auto& k : e.kinds)
      fmt::print(out_, "  {} {}", k.kind, percent(k.predicted_s, k.measured_s));
    fmt::print(out_, "\n");
  }

  // Each run predicted by the fit (in sample) and, with several runs, by a fit on the others.
  // The mean absolute step error of the runs each predicted by a fit on the others (none: one run).
  std::optional<double> print_run_errors(const KindCalibration& bench_kinds) const {
    fmt::print(out_,
               "\nprediction error per run (compute predicted; communication as measured):\n");
    double sum_in = 0, sum_out = 0;
    int held_out = 0;
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      fmt::print(out_, " {}\n", runs_[i].path);
      const auto in = prediction_error(runs_[i], device_, kinds_);
      print_error(in, "in-sample");
      sum_in += std::abs(in.predicted_step_s - in.measured_step_s) / in.measured_step_s;
      if (runs_.size() < 2) continue;
      std::vector<RunData> others;
      for (std::size_t j = 0; j < runs_.size(); ++j)
        if (j != i) others.push_back(runs_[j]);
      const auto out =
          prediction_error(runs_[i], device_, fit_compute_from_runs(others, device_, bench_kinds));
      print_error(out, "held-out");
      sum_out += std::abs(out.predicted_step_s - out.measured_step_s) / out.measured_step_s;
      ++held_out;
    }
    fmt::print(out_, "  mean absolute step error: in-sample {:.1f}%", 100 * sum_in / runs_.size());
    if (held_out) fmt::print(out_, ", held out {:.1f}%", 100 * sum_out / held_out);
    fmt::print(out_, "\n");
    if (!held_out) return std::nullopt;
    return sum_out / held_out;
  }

  void fit_link() {
    link_ =
        per_bench_s_.empty()
            ? calib::fit_link(benches_, link_class_, comm_.streams_per_peer, o_.path_rtt_ms / 1e3)
            : fit_link_per_bench(benches_, link_class_, comm_.streams_per_peer, per_bench_s_);
    fmt::print(out_, "\nlink {}:\n", link_class_.name);
    for (const auto& n : link_.notes) fmt::print(out_, "  {}\n", n);
  }

  void record_link() {
    cal_.links[link_class_.name] = link_.link;
    fmt::print(out_, "  latency {:.4g} ms one way, bandwidth {:.4g} MB/s, window {}\n",
               *link_.link.latency_s * 1e3, *link_.link.bandwidth / 1e6,
               link_.link.tcp_window_bytes
                   ? fmt::format("{:.4g} MiB", *link_.link.tcp_window_bytes / (1 << 20))
                   : "(not set)");
  }

  // Two ranks of one VM: what the simulator's intra-VM (pcie) links stand for there.
  void fit_intra_vm_link() {
    const LinkClass& pcie = catalog_.link_class("pcie");
    const LinkFit intra = calib::fit_link({read_bench(o_.intra_vm_bench)}, pcie, 1, 0);
    fmt::print(out_, "\nlink {} (inside a VM, {}):\n", pcie.name, o_.intra_vm_bench);
    for (const auto& n : intra.notes) fmt::print(out_, "  {}\n", n);
    if (!intra.measured)
      fail("--intra-vm-bench {}: no pair of ranks was measured", o_.intra_vm_bench);
    LinkCalibration l = intra.link;
    l.tcp_window_bytes.reset();  // one VM: no window to speak of
    const auto large = calib::large_transfer_bandwidth(read_bench(o_.intra_vm_bench));
    if (large && *large < *l.bandwidth) {
      fmt::print(out_,
                 "  bandwidth from the largest collectives ({:.4g} MB/s), not the stream of "
                 "smaller messages ({:.4g} MB/s), which the cache serves\n",
                 *large / 1e6, *l.bandwidth / 1e6);
      l.bandwidth = *large;
    }
    cal_.links[pcie.name] = l;
    fmt::print(out_, "  latency {:.4g} ms one way, bandwidth {:.4g} MB/s\n", *l.latency_s * 1e3,
               *l.bandwidth / 1e6);
  }

  // A path as the simulator sees it: the link's latency plus half the path's round trip; the
  // window over all of a peer's streams.
  CollectivePath path_of(double rtt_s) const {
    const double window =
        link_.link.tcp_window_bytes ? *link_.link.tcp_window_bytes : link_class_.tcp_window_bytes;
    return CollectivePath{*link_.link.latency_s + rtt_s / 2, *link_.link.bandwidth,
                          window * std::max(1, comm_.streams_per_peer)};
  }

  // Each bench's path, and each run's (--run-path-rtt-ms, else the first bench's).
  void fit_collective_corrections() {
    if (!(link_.measured && link_.link.latency_s && link_.link.bandwidth)) {
      fmt::print(out_,
                 "\ncollectives: not fitted, the link's latency and bandwidth were not measured\n");
      return;
    }
    std::vector<CollectiveTiming> timings;
    for (std::size_t i = 0; i < benches_.size(); ++i) {
      const auto t = bench_collective_timings(benches_[i], path_of(bench_rtt_s(i)));
      timings.insert(timings.end(), t.begin(), t.end());
    }
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const auto t = run_collective_timings(runs_[i], path_of(run_rtt_s(i)));
      timings.insert(timings.end(), t.begin(), t.end());
    }
    print_collective_fits(timings);
    fit_p2p_correction();
  }

  void print_collective_fits(const std::vector<CollectiveTiming>& timings) {
    const auto fits = calib::fit_collectives(timings, o_.small_collective_bytes,
                                             comm_.started_reduce_scatter_via_root);
    fmt::print(out_,
               "\ncollectives ({} measured calls; t = overhead + terms * latency + factor * bytes "
               "/ bandwidth):\n",
               timings.size());
    for (const auto& [op, f] : fits) {
      cal_.collectives[op] = f.correction;
      fmt::print(out_,
                 "  {:<14} latency_terms {:.3f}  bandwidth_factor {:.3f}  overhead {:.3g} ms  ({} "
                 "calls, rms "
                 "relative residual {:.1f}%)\n",
                 to_string(op), f.correction.latency_terms, f.correction.bandwidth_factor,
                 1e3 * f.correction.overhead_s, f.samples, 100 * f.rms_relative);
      if (f.small_samples)
        fmt::print(out_,
                   "  {:<14} calls of at most {:.0f} bytes: latency_terms {:.3f} ({} calls)\n", "",
                   o_.small_collective_bytes, f.correction.small_latency_terms, f.small_samples);
    }
    if (fits.empty())
      fmt::print(out_, "  none fitted (too few calls): the ring/tree default stands\n");
  }

  void fit_p2p_correction() {
    std::vector<MessageTiming> messages;
    for (std::size_t i = 0; i < benches_.size(); ++i) {
      const auto m = bench_message_timings(benches_[i], path_of(bench_rtt_s(i)));
      messages.insert(messages.end(), m.begin(), m.end());
    }
    if (const auto p2p = fit_p2p(messages)) {
      cal_.p2p = *p2p;
      fmt::print(
          out_,
          "  {:<14} latency_terms {:.3f}  overhead {:.3g} ms  ({} ping-pong sizes and paths)\n",
          "p2p", p2p->latency_terms, 1e3 * p2p->overhead_s, messages.size());
    }
  }

  void fit_steps() {
    const Slice slice = load_slice(o_.fit_steps_slice, catalog_);
    std::vector<StepFitRun> fit_runs;
    for (std::size_t i = 0; i < runs_.size(); ++i) fit_runs.push_back({&runs_[i], run_rtt_s(i)});
    const auto fit = fit_collectives_to_steps(slice, fit_runs, cal_, o_.small_collective_bytes);
    fmt::print(out_, "\ncommunication fitted to whole steps on slice {} ({} simulations):\n",
               slice.name, fit.simulations);
    for (const auto& [op, c] : cal_.collectives)
      fmt::print(out_,
                 "  {:<14} latency_terms {:.3f}  bandwidth_factor {:.3f}  overhead {:.3g} ms  "
                 "small calls' "
                 "latency_terms {:.3f}\n",
                 to_string(op), c.latency_terms, c.bandwidth_factor, 1e3 * c.overhead_s,
                 c.small_latency_terms);
    if (cal_.p2p)
      fmt::print(out_, "  {:<14} latency_terms {:.3f}  overhead {:.3g} ms\n", "p2p",
                 cal_.p2p->latency_terms, 1e3 * cal_.p2p->overhead_s);
    print_step_errors(fit);
  }

  void print_step_errors(const StepFitResult& fit) const {
    double before = 0, after = 0;
    for (std::size_t i = 0; i < fit.labels.size(); ++i) {
      fmt::print(out_,
                 "  {}: measured {:.4f} s, simulated {:.4f} s ({}) before, {:.4f} s ({}) after\n",
                 fit.labels[i], fit.measured_s[i], fit.before_s[i],
                 percent(fit.before_s[i], fit.measured_s[i]), fit.after_s[i],
                 percent(fit.after_s[i], fit.measured_s[i]));
      before += std::abs(fit.before_s[i] / fit.measured_s[i] - 1);
      after += std::abs(fit.after_s[i] / fit.measured_s[i] - 1);
    }
    fmt::print(out_, "  mean absolute step error (in sample): {:.1f}% before, {:.1f}% after\n",
               100 * before / fit.labels.size(), 100 * after / fit.labels.size());
  }

  const CalibrationRequest& o_;
  std::FILE* out_;
  const Catalog& catalog_;
  const GpuType& device_;
  const LinkClass& link_class_;
  const CommunicatorProfile& comm_;
  std::vector<double> per_bench_s_;
  std::vector<BenchData> benches_;
  std::vector<RunData> runs_;
  KindCalibration kinds_;
  LinkFit link_;
  Calibration cal_;
};

}  // namespace

CalibrationOutcome run_calibration(const CalibrationRequest& request, std::FILE* out) {
  return Pipeline(request, out).run();
}

}  // namespace fabtrain::calib
