// Compute-parameter fits (see fit_compute.hpp).
#include "calibrate/fit_compute.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "sim/simulator.hpp"

namespace fabtrain::calib {
namespace {

constexpr double kMinEfficiency = 1e-6;  // the calibration loader's range

double clamp_efficiency(double e) { return std::clamp(e, kMinEfficiency, 1.0); }

WorkKind kind_of(const std::string& kind) {
  if (kind == "fwd") return WorkKind::forward;
  if (kind == "bwd") return WorkKind::backward;
  return WorkKind::optimizer;
}

ComputeDefaults catalog_defaults() {
  ComputeDefaults d = builtin_catalog().compute;
  return d;
}

}  // namespace

KindCalibration fit_compute_from_bench(const BenchData& bench, const GpuType& device,
                                       std::vector<std::string>& notes) {
  if (!(device.peak_fp32_flops > 0) || !(device.memory_bandwidth > 0))
    fail("device type {} has no fp32 peak or memory bandwidth in the catalog", device.name);
  double fwd_flops = 0, fwd_s = 0, bwd_flops = 0, bwd_s = 0;
  for (const auto& g : bench.gemm) {
    (g.pass == "forward" ? fwd_flops : bwd_flops) += g.flops;
    (g.pass == "forward" ? fwd_s : bwd_s) += g.seconds;
  }
  if (fwd_s <= 0 || bwd_s <= 0)
    fail("{}: gemm needs forward and backward passes to fit both kinds", bench.path);
  const double fwd_rate = fwd_flops / fwd_s, bwd_rate = bwd_flops / bwd_s;
  std::vector<double> rates;
  double triad = 0;
  for (const auto& m : bench.memory) {
    rates.push_back(m.bytes / m.seconds);
    if (m.kernel == "triad") triad = m.bytes / m.seconds;
  }
  std::sort(rates.begin(), rates.end());
  const double memory_rate = rates[rates.size() / 2];
  if (triad <= 0) triad = memory_rate;

  // The bench model's instruction mix on one rank.
  const ModelSpec model = model_of(bench.model_fields, bench.model, bench.path);
  const Schedule schedule = compile(model, parse_plan("dp=1"), bench.batch, bench.seq);
  double F[2] = {0, 0}, Y[2] = {0, 0};
  for (const auto& in : schedule.ranks[0]) {
    if (const auto* f = std::get_if<Forward>(&in)) F[0] += f->flops, Y[0] += f->bytes;
    if (const auto* b = std::get_if<Backward>(&in)) F[1] += b->flops, Y[1] += b->bytes;
  }
  const double memory_efficiency = memory_rate / device.memory_bandwidth;
  if (memory_efficiency > 1)
    notes.push_back(
        fmt::format("measured memory bandwidth {:.3g} GB/s exceeds {}'s catalog {:.3g} GB/s: "
                    "efficiency capped at 1 (raise the catalog's number)",
                    memory_rate / 1e9, device.name, device.memory_bandwidth / 1e9));
  KindCalibration cal;
  const double rate[2] = {fwd_rate, bwd_rate};
  for (int k = 0; k < 2; ++k) {
    const double seconds = F[k] / rate[k] + Y[k] / memory_rate;
    ComputeCalibration c;
    c.matmul_efficiency = clamp_efficiency(F[k] / seconds / device.peak_fp32_flops);
    c.memory_efficiency = clamp_efficiency(memory_efficiency);
    c.kernel_overhead_s = 0;  // folded into the efficiency above
    cal[k == 0 ? WorkKind::forward : WorkKind::backward] = c;
    notes.push_back(fmt::format(
        "{}: GEMM {:.3g} GFLOP/s ({:.1f}% of peak {:.3g}), element-wise {:.3g} GB/s; {} model's "
        "mix {:.3g} FLOP + {:.3g} B -> effective {:.1f}% of peak",
        k == 0 ? "forward" : "backward", rate[k] / 1e9, 100 * rate[k] / device.peak_fp32_flops,
        device.peak_fp32_flops / 1e9, memory_rate / 1e9, model.name, F[k], Y[k],
        100 * *c.matmul_efficiency));
  }
  ComputeCalibration opt;
  opt.memory_efficiency = clamp_efficiency(triad / device.memory_bandwidth);
  opt.kernel_overhead_s = 0;
  cal[WorkKind::optimizer] = opt;
  return cal;
}

LinearFit fit_linear(const std::vector<ComputeSample>& samples, bool use_flops) {
  LinearFit fit;
  fit.form = use_flops ? "flops" : "bytes";
  fit.samples = int(samples.size());
  if (samples.empty()) return fit;
  // Weighted by 1/t: each sample's relative error counts the same.
  auto x_of = [&](const ComputeSample& s) { return use_flops ? s.flops : s.bytes; };
  double sxx = 0, sxb = 0, sbb = 0, sxt = 0, sbt = 0;
  for (const auto& s : samples) {
    const double w = 1.0 / std::max(s.duration_s, 1e-9);
    const double x = x_of(s) * w, b = s.blocks * w, t = s.duration_s * w;
    sxx += x * x, sxb += x * b, sbb += b * b, sxt += x * t, sbt += b * t;
  }
  auto sse = [&](double a, double c) {
    double e = 0;
    for (const auto& s : samples) {
      const double r = (a * x_of(s) + c * s.blocks - s.duration_s) / std::max(s.duration_s, 1e-9);
      e += r * r;
    }
    return e;
  };
  struct Candidate {
    double a, c;
  };
  std::vector<Candidate> candidates;
  const double det = sxx * sbb - sxb * sxb;
  if (std::abs(det) > 1e-30 * std::max(1.0, sxx * sbb)) {
    const double a = (sxt * sbb - sbt * sxb) / det, c = (sbt * sxx - sxt * sxb) / det;
    if (a >= 0 && c >= 0) candidates.push_back({a, c});
  }
  if (sxx > 0) candidates.push_back({std::max(0.0, sxt / sxx), 0});
  if (sbb > 0) candidates.push_back({0, std::max(0.0, sbt / sbb)});
  Candidate best{0, 0};
  double best_e = sse(0, 0);
  for (const auto& c : candidates)
    if (const double e = sse(c.a, c.c); e < best_e) best = c, best_e = e;
  fit.slope = best.a;
  fit.per_block_s = best.c;
  fit.rms_relative = std::sqrt(best_e / samples.size());
  return fit;
}

double predict_seconds(const ComputeSample& s, const GpuType& device,
                       const KindCalibration& kinds) {
  Calibration cal;
  cal.compute[device.name] = kinds;
  Instruction in;
  if (s.kind == "fwd")
    in = Forward{0, 0, s.blocks, s.flops, s.bytes};
  else if (s.kind == "bwd")
    in = Backward{0, 0, s.blocks, s.flops, s.bytes};
  else
    in = OptimizerStep{0, s.bytes};
  return compute_seconds(in, device, Precision::fp32, catalog_defaults(), cal);
}

KindCalibration fit_compute_from_runs(const std::vector<RunData>& runs, const GpuType& device,
                                      const KindCalibration& base, std::vector<LinearFit>* fits) {
  // Per kind: every instruction (for the roofline guard below) and, what is fitted, each
  // step's sum of that kind's instructions on the slowest rank. A step's time is such a sum, so
  // fitting sums weighs instructions by their share of the step; fitting instructions one by one
  // with relative residuals let the many tiny ones (embedding, layer norm blocks) pull the slope
  // down, and the step came out 30-60% short on the emulated slice.
  std::map<std::string, std::vector<ComputeSample>> by_kind, sums_by_kind;
  for (const auto& run : runs) {
    // The first timed step carries warm-up (page faults, connection set-up): leave it out
    // when there are others.
    const std::size_t first = run.steps.size() > 1 ? 1 : 0;
    for (std::size_t i = first; i < run.steps.size(); ++i) {
      std::map<std::pair<std::string, int>, ComputeSample> sums;
      for (const auto& c : run.steps[i].compute) {
        by_kind[c.kind].push_back(c);
        ComputeSample& sum =
            sums.try_emplace({c.kind, c.rank}, ComputeSample{c.kind, c.rank, 0, 0, 0, 0})
                .first->second;
        sum.flops += c.flops, sum.bytes += c.bytes, sum.blocks += c.blocks,
            sum.duration_s += c.duration_s;
      }
      // Per kind only the slowest rank's sum: ranks meet at every collective, so a step sees the
      // slower rank's compute; on shared cores the two ranks' times of the same work differ by
      // 10-40%, and fitting their mean predicted steps 20-40% short.
      std::map<std::string, ComputeSample> slowest;
      for (const auto& [key, sum] : sums) {
        auto [it, fresh] = slowest.try_emplace(key.first, sum);
        if (!fresh && sum.duration_s > it->second.duration_s) it->second = sum;
      }
      for (const auto& [k, sum] : slowest) sums_by_kind[k].push_back(sum);
    }
  }
  KindCalibration cal = base;
  const ComputeDefaults defaults = builtin_catalog().compute;
  for (const auto& [kind, samples] : by_kind) {
    const WorkKind wk = kind_of(kind);
    const auto& sums = sums_by_kind.at(kind);
    LinearFit by_flops = fit_linear(sums, true), by_bytes = fit_linear(sums, false);
    // Forward and backward are matrix products: the bytes form must fit clearly better to win
    // (where bytes are proportional to flops the two fit alike, and rounding would decide).
    const bool flops_form =
        kind != "opt" && by_flops.slope > 0 &&
        (by_bytes.slope <= 0 || by_flops.rms_relative <= 1.01 * by_bytes.rms_relative);
    const LinearFit& f = flops_form ? by_flops : by_bytes;
    if (fits) fits->push_back(f);
    if (!(f.slope > 0) && !(f.per_block_s > 0)) continue;  // nothing to learn: keep the base
    ComputeCalibration c = cal.count(wk) ? cal[wk] : ComputeCalibration{};
    c.kernel_overhead_s = std::min(f.per_block_s, 1.0);
    if (!(f.slope > 0)) {
      // Only the per-block term: the work itself is as fast as the device allows.
      c.matmul_efficiency = 1.0;
      c.memory_efficiency = 1.0;
    } else if (flops_form) {
      c.matmul_efficiency = clamp_efficiency(1.0 / (f.slope * device.peak_fp32_flops));
      // Keep the memory term below the fitted compute term for every sample (the roofline's max).
      double needed = c.memory_efficiency.value_or(defaults.memory_efficiency);
      for (const auto& s : samples)
        if (s.flops > 0)
          needed = std::max(needed, s.bytes / (device.memory_bandwidth * f.slope * s.flops));
      c.memory_efficiency = clamp_efficiency(needed);
    } else {
      c.memory_efficiency = clamp_efficiency(1.0 / (f.slope * device.memory_bandwidth));
      if (kind != "opt") {
        double needed = c.matmul_efficiency.value_or(defaults.matmul_efficiency);
        for (const auto& s : samples)
          if (s.bytes > 0)
            needed = std::max(needed, s.flops / (device.peak_fp32_flops * f.slope * s.bytes));
        c.matmul_efficiency = clamp_efficiency(needed);
      }
    }
    cal[wk] = c;
  }
  return cal;
}

RunError prediction_error(const RunData& run, const GpuType& device, const KindCalibration& cal) {
  RunError e;
  e.run = run.path;
  std::map<std::string, KindError> kinds;
  const std::size_t first = run.steps.size() > 1 ? 1 : 0;
  const double steps = double(run.steps.size() - first);
  for (std::size_t i = first; i < run.steps.size(); ++i) {
    const StepSample& step = run.steps[i];
    std::vector<double> per_rank(run.world, 0.0);
    for (int r = 0; r < run.world; ++r) per_rank[r] = step.communication_s[r] + step.other_s[r];
    for (const auto& c : step.compute) {
      const double p = predict_seconds(c, device, cal);
      per_rank[c.rank] += p;
      KindError& k = kinds[c.kind];
      k.kind = c.kind;
      k.measured_s += c.duration_s / steps;
      k.predicted_s += p / steps;
    }
    e.measured_step_s += step.wall_s / steps;
    e.predicted_step_s += *std::max_element(per_rank.begin(), per_rank.end()) / steps;
  }
  for (auto& [name, k] : kinds) e.kinds.push_back(k);
  return e;
}

}  // namespace fabtrain::calib
