// Least squares of collective call times (see fit_collectives.hpp).
#include "calibrate/fit_collectives.hpp"

#include <cmath>

#include "sim/tcp_window.hpp"

namespace fabtrain::calib {
namespace {

struct Weighted {
  double x1, x2, y, w;  // features, measured seconds, weight
};

// Minimises sum w (y - a x1 - b x2)^2; false when the normal equations are singular.
bool solve_two(const std::vector<Weighted>& s, double& a, double& b) {
  double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0;
  for (const auto& p : s) {
    s11 += p.w * p.x1 * p.x1;
    s12 += p.w * p.x1 * p.x2;
    s22 += p.w * p.x2 * p.x2;
    s1y += p.w * p.x1 * p.y;
    s2y += p.w * p.x2 * p.y;
  }
  const double det = s11 * s22 - s12 * s12;
  if (!(std::abs(det) > 1e-12 * s11 * s22) || s11 <= 0 || s22 <= 0) return false;
  a = (s1y * s22 - s2y * s12) / det;
  b = (s11 * s2y - s12 * s1y) / det;
  return true;
}

// One coefficient on feature x with the other term fixed: minimises sum w (y - fixed - c x)^2.
double solve_one(const std::vector<Weighted>& s, bool first, double other) {
  double sxx = 0, sxy = 0;
  for (const auto& p : s) {
    const double x = first ? p.x1 : p.x2;
    const double rest = p.y - other * (first ? p.x2 : p.x1);
    sxx += p.w * x * x;
    sxy += p.w * x * rest;
  }
  return sxx > 0 ? sxy / sxx : 0;
}

}  // namespace

double CollectivePath::rate(double bytes) const {
  const double seconds = window_limited_seconds(bytes, window, 2 * latency_s, line_rate);
  return seconds > 0 ? bytes / seconds : line_rate;
}

bool collective_op(const std::string& name, CollectiveOp& op) {
  for (CollectiveOp o : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather})
    if (name == to_string(o)) {
      op = o;
      return true;
    }
  return false;
}

std::map<CollectiveOp, CollectiveFit> fit_collectives(const std::vector<CollectiveTiming>& timings) {
  std::map<CollectiveOp, std::vector<Weighted>> by_op;
  for (const auto& t : timings)
    if (t.seconds >= kFewestLatencies * t.latency_s && t.latency_s > 0 && t.bandwidth > 0)
      by_op[t.op].push_back({t.latency_s, t.bytes / t.bandwidth, t.seconds, 1});
  std::map<CollectiveOp, CollectiveFit> fits;
  for (const auto& [op, samples] : by_op) {
    if (samples.size() < 2) continue;
    double a = 0, b = 0;
    if (!solve_two(samples, a, b)) continue;
    if (a < 1) {
      a = 1;
      b = solve_one(samples, false, a);
    }
    if (b < 0) {
      b = 0;
      a = std::max(1.0, solve_one(samples, true, b));
    }
    double sum = 0;
    for (const auto& p : samples) {
      const double r = (a * p.x1 + b * p.x2 - p.y) / p.y;
      sum += r * r;
    }
    fits[op] = {{a, b}, int(samples.size()), std::sqrt(sum / samples.size())};
  }
  return fits;
}

std::vector<CollectiveTiming> run_collective_timings(const RunData& run, const CollectivePath& path) {
  std::vector<CollectiveTiming> out;
  for (std::size_t i = run.steps.size() > 1 ? 1 : 0; i < run.steps.size(); ++i)
    for (const auto& c : run.steps[i].collectives) {
      CollectiveOp op;
      if (c.members >= 2 && collective_op(c.op, op))
        out.push_back({op, c.bytes, c.seconds, path.latency_s, path.rate(c.bytes)});
    }
  return out;
}

std::vector<CollectiveTiming> bench_collective_timings(const BenchData& bench, const CollectivePath& path) {
  std::vector<CollectiveTiming> out;
  for (const auto& c : bench.collectives) {
    CollectiveOp op;
    if (c.ranks >= 2 && collective_op(c.op, op))
      out.push_back({op, c.bytes, c.seconds, path.latency_s, path.rate(c.bytes)});
  }
  return out;
}

}  // namespace fabtrain::calib
