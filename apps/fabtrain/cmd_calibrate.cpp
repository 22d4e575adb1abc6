// fabtrain calibrate: fit the simulator's cost parameters from `fabtrain-exec bench` files and,
// optionally, executor run records; print the fit and the prediction error per run (in sample,
// and held out: each run predicted by a fit on the others); write the calibration YAML that
// `fabtrain simulate --calibration` reads.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "sim/cost/calibration_file.hpp"
#include "calibrate/fit_collectives.hpp"
#include "calibrate/fit_compute.hpp"
#include "calibrate/fit_links.hpp"
#include "calibrate/fit_steps.hpp"
#include "calibrate/inputs.hpp"
#include "command.hpp"
#include "common/error.hpp"

namespace fabtrain {
namespace {

struct CalibrateOptions {
  std::vector<std::string> benches, runs;
  std::string device_type = "CPU_HOST";
  std::string link_class = "l2sts";
  std::string communicator = "openmpi-tcp";  // what moved the benches' and runs' bytes
  double path_rtt_ms = 0;
  std::vector<double> bench_path_rtt_ms;  // one per bench, or empty
  std::vector<double> run_path_rtt_ms;    // one per run, or empty: the first bench's path
  bool fit_collectives = false;
  double small_collective_bytes = 4096;
  std::string fit_steps_slice;  // empty: no step fit
  std::string intra_vm_bench;   // a bench of two ranks inside one VM: fits the pcie class
  bool keep_compute = false;    // compute stays the catalog's (runs of fabtrain-exec replay)
  std::string output;
};

std::string percent(double predicted, double measured) {
  return measured > 0 ? fmt::format("{:+.1f}%", 100 * (predicted - measured) / measured) : "-";
}

void print_errors(const calib::RunError& e, const char* label) {
  fmt::print("  {:<9} step {:>9.4f} s predicted {:>9.4f} s ({})", label, e.measured_step_s,
             e.predicted_step_s, percent(e.predicted_step_s, e.measured_step_s));
  for (const auto& k : e.kinds)
    fmt::print("  {} {}", k.kind, percent(k.predicted_s, k.measured_s));
  fmt::print("\n");
}

void print_kinds(const calib::KindCalibration& kinds, const GpuType& device) {
  for (const auto& [kind, c] : kinds)
    fmt::print("  {:<9} matmul {:>7}  memory {:>7}  overhead {}\n", to_string(kind),
               c.matmul_efficiency ? fmt::format("{:.4f}", *c.matmul_efficiency) : "-",
               c.memory_efficiency ? fmt::format("{:.4f}", *c.memory_efficiency) : "-",
               c.kernel_overhead_s ? fmt::format("{:.3g} s", *c.kernel_overhead_s) : "-");
}

void run(const CalibrateOptions& o) {
  const Catalog& catalog = builtin_catalog();
  const GpuType& device = catalog.gpu(o.device_type);
  const LinkClass& link_class = catalog.link_class(o.link_class);
  const CommunicatorProfile& comm = catalog.communicator(o.communicator);
  fmt::print("fabtrain calibrate\n  device   {} (peak fp32 {:.3g} GFLOP/s, memory {:.3g} GB/s, {})\n",
             device.name, device.peak_fp32_flops / 1e9, device.memory_bandwidth / 1e9, catalog.path);
  fmt::print("  link     {}, communicator {} ({} streams per peer)\n", link_class.name, comm.name,
             comm.streams_per_peer);
  std::vector<calib::BenchData> benches;
  for (const auto& path : o.benches) {
    benches.push_back(calib::read_bench(path));
    const auto& b = benches.back();
    fmt::print("  bench    {}: {} ranks on {}, {} threads, model {} B={} T={}\n", path, b.world,
               b.device, b.threads, b.model, b.batch, b.seq);
  }
  std::vector<calib::RunData> runs;
  for (const auto& path : o.runs) {
    runs.push_back(calib::read_run_record(path));
    fmt::print("  run      {}: {} ranks, model {}, plan {}, {} timed steps\n", path, runs.back().world,
               runs.back().model, runs.back().plan, runs.back().steps.size());
  }

  std::vector<std::string> notes;
  calib::KindCalibration kinds;
  if (o.keep_compute) {
    fmt::print("\ncompute: the catalog's (--keep-compute: the runs' compute was modelled, not measured)\n");
  } else {
    kinds = calib::fit_compute_from_bench(benches.front(), device, notes);
  fmt::print("\ncompute from bench ({}):\n", benches.front().path);
  for (const auto& n : notes) fmt::print("  {}\n", n);
  print_kinds(kinds, device);
  }

  if (!runs.empty() && !o.keep_compute) {
    std::vector<calib::LinearFit> fits;
    const auto bench_kinds = kinds;
    kinds = calib::fit_compute_from_runs(runs, device, bench_kinds, &fits);
    fmt::print("\ncompute refined by least squares on {} run(s):\n", runs.size());
    for (const auto& f : fits)
      fmt::print("  {} samples: t = {:.4g} s/{} + {:.3g} s/block, rms relative residual {:.1f}%\n",
                 f.samples, f.slope, f.form == "flops" ? "FLOP" : "byte", f.per_block_s,
                 100 * f.rms_relative);
    print_kinds(kinds, device);
    fmt::print("\nprediction error per run (compute predicted; communication as measured):\n");
    double sum_in = 0, sum_out = 0;
    int held_out = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      fmt::print(" {}\n", runs[i].path);
      const auto in = calib::prediction_error(runs[i], device, kinds);
      print_errors(in, "in-sample");
      sum_in += std::abs(in.predicted_step_s - in.measured_step_s) / in.measured_step_s;
      if (runs.size() > 1) {
        std::vector<calib::RunData> others;
        for (std::size_t j = 0; j < runs.size(); ++j)
          if (j != i) others.push_back(runs[j]);
        const auto out = calib::prediction_error(runs[i], device,
                                                 calib::fit_compute_from_runs(others, device, bench_kinds));
        print_errors(out, "held-out");
        sum_out += std::abs(out.predicted_step_s - out.measured_step_s) / out.measured_step_s;
        ++held_out;
      }
    }
    fmt::print("  mean absolute step error: in-sample {:.1f}%", 100 * sum_in / runs.size());
    if (held_out) fmt::print(", held out {:.1f}%", 100 * sum_out / held_out);
    fmt::print("\n");
  }

  std::vector<double> per_bench_s;
  for (double ms : o.bench_path_rtt_ms) per_bench_s.push_back(ms / 1e3);
  // The round trip each bench's and each run's path added (a run's default: the first bench's).
  auto bench_rtt_s = [&](std::size_t bench) {
    return per_bench_s.empty() ? (bench == 0 ? o.path_rtt_ms / 1e3 : 0.0) : per_bench_s[bench];
  };
  if (!o.run_path_rtt_ms.empty() && o.run_path_rtt_ms.size() != runs.size())
    fail("--run-path-rtt-ms has {} values for {} --runs: give one per run, in order",
         o.run_path_rtt_ms.size(), runs.size());
  auto run_rtt_s = [&](std::size_t run) {
    return o.run_path_rtt_ms.empty() ? bench_rtt_s(0) : o.run_path_rtt_ms[run] / 1e3;
  };
  const calib::LinkFit link = per_bench_s.empty()
                                  ? calib::fit_link(benches, link_class, comm.streams_per_peer, o.path_rtt_ms / 1e3)
                                  : calib::fit_link_per_bench(benches, link_class, comm.streams_per_peer, per_bench_s);
  fmt::print("\nlink {}:\n", link_class.name);
  for (const auto& n : link.notes) fmt::print("  {}\n", n);
  Calibration cal;
  if (!kinds.empty()) cal.compute[device.name] = kinds;
  if (!o.intra_vm_bench.empty()) {
    // Two ranks of one VM: what the simulator's intra-VM (pcie) links stand for there.
    const LinkClass& pcie = catalog.link_class("pcie");
    const calib::LinkFit intra = calib::fit_link({calib::read_bench(o.intra_vm_bench)}, pcie, 1, 0);
    fmt::print("\nlink {} (inside a VM, {}):\n", pcie.name, o.intra_vm_bench);
    for (const auto& n : intra.notes) fmt::print("  {}\n", n);
    if (!intra.measured) fail("--intra-vm-bench {}: no pair of ranks was measured", o.intra_vm_bench);
    LinkCalibration l = intra.link;
    l.tcp_window_bytes.reset();  // one VM: no window to speak of
    cal.links[pcie.name] = l;
    fmt::print("  latency {:.4g} ms one way, bandwidth {:.4g} MB/s\n", *l.latency_s * 1e3, *l.bandwidth / 1e6);
  }
  if (link.measured) {
    cal.links[link_class.name] = link.link;
    fmt::print("  latency {:.4g} ms one way, bandwidth {:.4g} MB/s, window {}\n",
               *link.link.latency_s * 1e3, *link.link.bandwidth / 1e6,
               link.link.tcp_window_bytes ? fmt::format("{:.4g} MiB", *link.link.tcp_window_bytes / (1 << 20))
                                          : "(not set)");
  }
  if (o.fit_collectives && !(link.measured && link.link.latency_s && link.link.bandwidth))
    fmt::print("\ncollectives: not fitted, the link's latency and bandwidth were not measured\n");
  if (o.fit_collectives && link.measured && link.link.latency_s && link.link.bandwidth) {
    // Each bench's path, and each run's (--run-path-rtt-ms, else the first bench's), as the simulator sees
    // it: the link's latency plus half the path's round trip; the window over all of a peer's streams.
    const double window = link.link.tcp_window_bytes ? *link.link.tcp_window_bytes : link_class.tcp_window_bytes;
    auto path_of = [&](double rtt) {
      return calib::CollectivePath{*link.link.latency_s + rtt / 2, *link.link.bandwidth,
                                   window * std::max(1, comm.streams_per_peer)};
    };
    std::vector<calib::CollectiveTiming> timings;
    for (std::size_t i = 0; i < benches.size(); ++i) {
      const auto t = calib::bench_collective_timings(benches[i], path_of(bench_rtt_s(i)));
      timings.insert(timings.end(), t.begin(), t.end());
    }
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto t = calib::run_collective_timings(runs[i], path_of(run_rtt_s(i)));
      timings.insert(timings.end(), t.begin(), t.end());
    }
    const auto fits = calib::fit_collectives(timings, o.small_collective_bytes);
    fmt::print("\ncollectives ({} measured calls; t = overhead + terms * latency + factor * bytes / bandwidth):\n",
               timings.size());
    for (const auto& [op, f] : fits) {
      cal.collectives[op] = f.correction;
      fmt::print("  {:<14} latency_terms {:.3f}  bandwidth_factor {:.3f}  overhead {:.3g} ms  ({} calls, rms "
                 "relative residual {:.1f}%)\n",
                 to_string(op), f.correction.latency_terms, f.correction.bandwidth_factor,
                 1e3 * f.correction.overhead_s, f.samples, 100 * f.rms_relative);
      if (f.small_samples)
        fmt::print("  {:<14} calls of at most {:.0f} bytes: latency_terms {:.3f} ({} calls)\n", "", o.small_collective_bytes,
                   f.correction.small_latency_terms, f.small_samples);
    }
    if (fits.empty()) fmt::print("  none fitted (too few calls): the ring/tree default stands\n");
    std::vector<calib::MessageTiming> messages;
    for (std::size_t i = 0; i < benches.size(); ++i) {
      const auto m = calib::bench_message_timings(benches[i], path_of(bench_rtt_s(i)));
      messages.insert(messages.end(), m.begin(), m.end());
    }
    if (const auto p2p = calib::fit_p2p(messages)) {
      cal.p2p = *p2p;
      fmt::print("  {:<14} latency_terms {:.3f}  overhead {:.3g} ms  ({} ping-pong sizes and paths)\n", "p2p",
                 p2p->latency_terms, 1e3 * p2p->overhead_s, messages.size());
    }
  }
  if (!o.fit_steps_slice.empty()) {
    if (runs.empty()) fail("--fit-steps needs --runs to fit to");
    const Slice slice = load_slice(o.fit_steps_slice, catalog);
    std::vector<calib::StepFitRun> fit_runs;
    for (std::size_t i = 0; i < runs.size(); ++i)
      fit_runs.push_back({&runs[i], run_rtt_s(i)});
    const auto fit = calib::fit_collectives_to_steps(slice, fit_runs, cal, o.small_collective_bytes);
    fmt::print("\ncommunication fitted to whole steps on slice {} ({} simulations):\n", slice.name, fit.simulations);
    for (const auto& [op, c] : cal.collectives)
      fmt::print("  {:<14} latency_terms {:.3f}  bandwidth_factor {:.3f}  overhead {:.3g} ms  small calls' "
                 "latency_terms {:.3f}\n",
                 to_string(op), c.latency_terms, c.bandwidth_factor, 1e3 * c.overhead_s, c.small_latency_terms);
    if (cal.p2p)
      fmt::print("  {:<14} latency_terms {:.3f}  overhead {:.3g} ms\n", "p2p", cal.p2p->latency_terms,
                 1e3 * cal.p2p->overhead_s);
    double before = 0, after = 0;
    for (std::size_t i = 0; i < fit.labels.size(); ++i) {
      fmt::print("  {}: measured {:.4f} s, simulated {:.4f} s ({}) before, {:.4f} s ({}) after\n", fit.labels[i],
                 fit.measured_s[i], fit.before_s[i], percent(fit.before_s[i], fit.measured_s[i]), fit.after_s[i],
                 percent(fit.after_s[i], fit.measured_s[i]));
      before += std::abs(fit.before_s[i] / fit.measured_s[i] - 1);
      after += std::abs(fit.after_s[i] / fit.measured_s[i] - 1);
    }
    fmt::print("  mean absolute step error (in sample): {:.1f}% before, {:.1f}% after\n",
               100 * before / fit.labels.size(), 100 * after / fit.labels.size());
  }
  std::vector<std::string> comments = {"Written by fabtrain calibrate; read by fabtrain simulate --calibration.",
                                       "device " + device.name + ", link class " + link_class.name};
  for (const auto& b : o.benches) comments.push_back("bench " + b);
  for (const auto& r : o.runs) comments.push_back("run " + r);
  write_calibration(cal, comments, o.output);
  fmt::print("\nwrote {}\n", o.output);
}

Registration reg(80, [](CLI::App& app) {
  auto* cmd = app.add_subcommand("calibrate", "Fit the simulator's cost parameters from bench files and run records");
  auto o = std::make_shared<CalibrateOptions>();
  cmd->add_option("--bench", o->benches, "fabtrain-exec bench files (the first gives compute; all give links)")
      ->required();
  cmd->add_option("--runs", o->runs, "Run records (fabtrain-exec train --record) to refine compute");
  cmd->add_option("--device-type", o->device_type, "Catalog GPU/CPU type the bench ran on")->capture_default_str();
  cmd->add_option("--link-class", o->link_class, "Link class the ranks' pairs measured")->capture_default_str();
  cmd->add_option("--communicator", o->communicator,
                  "Communicator profile that moved the benches' and runs' bytes (catalog communicators)")
      ->capture_default_str();
  auto* path_rtt = cmd->add_option("--path-rtt-ms", o->path_rtt_ms,
                  "Round trip the path itself added during the shortest-RTT bench (0: no added delay)")
      ->capture_default_str();
  cmd->add_option("--bench-path-rtt-ms", o->bench_path_rtt_ms,
                  "Round trip each bench's path added, one per --bench in order (e.g. 0,100); "
                  "latency is the smallest corrected round trip / 2")
      ->delimiter(',')
      ->excludes(path_rtt);
  // Opt-in: runs over a short path alone cannot tell latency terms from per-call overheads (on
  // the emulated link, fitting on the benches plus 0 ms runs made the 5-50 ms predictions worse;
  // adding runs at the far delay made them better), so the default output stays as before.
  cmd->add_flag("--fit-collectives", o->fit_collectives,
                "Also fit per-op collective corrections (latency terms, bandwidth factor, per-call "
                "overhead) from the benches' collective sweeps and the runs' calls, and the p2p one from "
                "the benches' message ping-pongs; give runs over a long path too (--run-path-rtt-ms)");
  cmd->add_option("--small-collective-bytes", o->small_collective_bytes,
                  "Collective calls of at most this many bytes get their own latency terms (libraries "
                  "play small buffers with a latency-optimal algorithm); 0: no split")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--run-path-rtt-ms", o->run_path_rtt_ms,
                  "Round trip each run's path added, one per --runs in order (default: the first "
                  "bench's); used by --fit-collectives and --fit-steps")
      ->delimiter(',');
  cmd->add_option("--fit-steps", o->fit_steps_slice,
                  "Slice file the runs ran on: fit the collective corrections (latency terms, bandwidth "
                  "factor, per-call overhead) and, for pipelines, the p2p ones so that simulating each "
                  "run matches its measured step (median after the first); paths as --run-path-rtt-ms");
  cmd->add_option("--intra-vm-bench", o->intra_vm_bench,
                  "A bench of two ranks inside one VM: fit the intra-VM (pcie) link class from it");
  cmd->add_flag("--keep-compute", o->keep_compute,
                "Leave compute at the catalog's (runs of fabtrain-exec replay, whose compute is modelled)");
  cmd->add_option("-o,--output", o->output, "The calibration YAML to write")->required();
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
