// Least squares of collective call times (see fit_collectives.hpp).
#include "calibrate/fit_collectives.hpp"

#include <algorithm>
#include <cmath>

#include "sim/tcp_window.hpp"

namespace fabtrain::calib {
namespace {

constexpr int kFeatures = 3;  // latency, bytes / rate, 1 (per-call overhead)

struct Sample {
  double x[kFeatures];
  double y;  // measured seconds
};

// Lower bounds of latency_terms, bandwidth_factor, overhead_s.
constexpr double kLowest[kFeatures] = {1, 0, 0};

// Least squares of relative residuals with the features in `fixed` held at their lower bounds;
// false when the free ones cannot be separated or one falls below its bound.
bool solve_with_fixed(const std::vector<Sample>& samples, const bool fixed[kFeatures],
                      double out[kFeatures]) {
  int free[kFeatures], m = 0;
  for (int j = 0; j < kFeatures; ++j)
    if (!fixed[j]) free[m++] = j;
  double a[kFeatures][kFeatures + 1] = {};  // normal equations, augmented
  for (const auto& p : samples) {
    const double w = 1 / (p.y * p.y);
    double rest = p.y;
    for (int j = 0; j < kFeatures; ++j)
      if (fixed[j]) rest -= kLowest[j] * p.x[j];
    for (int r = 0; r < m; ++r) {
      for (int c = 0; c < m; ++c) a[r][c] += w * p.x[free[r]] * p.x[free[c]];
      a[r][m] += w * p.x[free[r]] * rest;
    }
  }
  for (int c = 0; c < m; ++c) {  // Gauss-Jordan with partial pivoting
    int pivot = c;
    for (int r = c + 1; r < m; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (!(std::abs(a[pivot][c]) > 1e-12 * std::abs(a[c][c] == 0 ? 1 : a[c][c])) || a[pivot][c] == 0)
      return false;
    std::swap(a[c], a[pivot]);
    for (int r = 0; r < m; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int k = c; k <= m; ++k) a[r][k] -= f * a[c][k];
    }
  }
  for (int j = 0; j < kFeatures; ++j) out[j] = kLowest[j];
  for (int r = 0; r < m; ++r) {
    out[free[r]] = a[r][m] / a[r][r];
    if (!std::isfinite(out[free[r]]) || out[free[r]] < kLowest[free[r]]) return false;
  }
  return true;
}

double rms_relative(const std::vector<Sample>& samples, const double c[kFeatures]) {
  double sum = 0;
  for (const auto& p : samples) {
    double t = 0;
    for (int j = 0; j < kFeatures; ++j) t += c[j] * p.x[j];
    sum += (t - p.y) * (t - p.y) / (p.y * p.y);
  }
  return std::sqrt(sum / double(samples.size()));
}

// Bounded least squares by enumeration: every choice of the features held at their lower bounds
// (those in always_held always are), the feasible fit with the smallest residual. False when none.
bool bounded_fit(const std::vector<Sample>& samples, int always_held, double best[kFeatures],
                 double& best_rms) {
  best_rms = INFINITY;
  for (int mask = 0; mask < (1 << kFeatures); ++mask) {
    if ((mask & always_held) != always_held) continue;
    bool fixed[kFeatures];
    for (int j = 0; j < kFeatures; ++j) fixed[j] = mask & (1 << j);
    double c[kFeatures];
    if (!solve_with_fixed(samples, fixed, c)) continue;
    const double rms = rms_relative(samples, c);
    if (rms < best_rms) {
      best_rms = rms;
      std::copy(c, c + kFeatures, best);
    }
  }
  return std::isfinite(best_rms);
}

}  // namespace

double CollectivePath::rate(double bytes) const {
  const double seconds = window_limited_seconds(bytes, window, 2 * latency_s, line_rate);
  return seconds > 0 ? bytes / seconds : line_rate;
}

bool collective_op(const std::string& name, CollectiveOp& op) {
  for (CollectiveOp o :
       {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather})
    if (name == to_string(o)) {
      op = o;
      return true;
    }
  return false;
}

std::map<CollectiveOp, CollectiveFit> fit_collectives(const std::vector<CollectiveTiming>& timings,
                                                      double small_bytes,
                                                      bool reduce_scatter_via_root) {
  std::map<CollectiveOp, std::vector<Sample>> by_op, small_by_op;
  for (const auto& t : timings) {
    if (!(t.seconds >= kFewestLatencies * t.latency_s && t.seconds > 0 && t.latency_s > 0 &&
          t.bandwidth > 0))
      continue;
    const bool via_root = reduce_scatter_via_root && t.op == CollectiveOp::reduce_scatter;
    const double latency_scale = via_root ? 1.0 : correction_latency_scale(t.members);
    const double volume_scale =
        via_root ? via_root_volume_scale(t.members) : correction_volume_scale(t.members);
    (t.bytes <= small_bytes ? small_by_op : by_op)[t.op].push_back(
        {{t.latency_s * latency_scale, t.bytes / t.bandwidth * volume_scale, 1}, t.seconds});
  }
  std::map<CollectiveOp, CollectiveFit> fits;
  for (const auto& [op, samples] : by_op) {
    if (samples.size() < 3) continue;
    double best[kFeatures], best_rms;
    if (!bounded_fit(samples, 0, best, best_rms)) continue;
    CollectiveFit fit;
    fit.correction = {best[0], best[1], best[2]};
    fit.samples = int(samples.size());
    fit.rms_relative = best_rms;
    const auto small = small_by_op.find(op);
    if (small != small_by_op.end() && !small->second.empty()) {
      // One coefficient on the latency, the rest as fitted: minimises the relative residuals,
      // over the calls the latency is a fair share of (all of them if none is).
      std::vector<Sample> informative;
      for (const auto& p : small->second)
        if (p.x[0] >= kLatencyShare * p.y) informative.push_back(p);
      const std::vector<Sample>& fitted = informative.empty() ? small->second : informative;
      double num = 0, den = 0;
      for (const auto& p : fitted) {
        const double w = 1 / (p.y * p.y);
        num += w * p.x[0] * (p.y - best[1] * p.x[1] - best[2]);
        den += w * p.x[0] * p.x[0];
      }
      fit.correction.small_bytes = small_bytes;
      fit.correction.small_latency_terms = std::max(1.0, den > 0 ? num / den : 1.0);
      fit.small_samples = int(fitted.size());
    }
    fits[op] = fit;
  }
  return fits;
}

std::vector<CollectiveTiming> run_collective_timings(const RunData& run,
                                                     const CollectivePath& path) {
  std::vector<CollectiveTiming> out;
  for (std::size_t i = run.steps.size() > 1 ? 1 : 0; i < run.steps.size(); ++i)
    for (const auto& c : run.steps[i].collectives) {
      CollectiveOp op;
      if (c.members >= 2 && collective_op(c.op, op))
        out.push_back({op, c.bytes, c.seconds, path.latency_s, path.rate(c.bytes), c.members});
    }
  return out;
}

std::vector<CollectiveTiming> bench_collective_timings(const BenchData& bench,
                                                       const CollectivePath& path) {
  std::vector<CollectiveTiming> out;
  for (const auto& c : bench.collectives) {
    CollectiveOp op;
    if (c.ranks >= 2 && collective_op(c.op, op))
      out.push_back({op, c.bytes, c.seconds, path.latency_s, path.rate(c.bytes), c.ranks});
  }
  return out;
}

std::vector<MessageTiming> bench_message_timings(const BenchData& bench,
                                                 const CollectivePath& path) {
  std::vector<MessageTiming> out;
  for (const auto& pair : pairs_across_hosts(bench))
    for (const auto& [bytes, seconds] : pair.message_latencies)
      out.push_back({bytes, seconds, path.latency_s, path.rate(bytes)});
  return out;
}

std::optional<P2pCalibration> fit_p2p(const std::vector<MessageTiming>& timings) {
  std::vector<Sample> samples;  // features: latency, unused, 1; y: time beyond the bytes' transfer
  for (const auto& t : timings) {
    const double y = t.seconds - t.bytes / t.bandwidth;
    if (y > 0 && t.latency_s > 0) samples.push_back({{t.latency_s, 0, 1}, y});
  }
  if (samples.size() < 2) return std::nullopt;
  double best[kFeatures], best_rms;
  if (!bounded_fit(samples, 1 << 1, best, best_rms)) return std::nullopt;  // no bytes term
  return P2pCalibration{best[0], best[2]};
}

}  // namespace fabtrain::calib
