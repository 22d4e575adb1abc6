// Timing a repeated measurement: one warm-up run, then repetitions until a time budget or a
// repetition limit is reached (at least min_reps), and the median of the repetitions' seconds.
// Not here: what is measured (exec/measure/bench_compute.hpp, exec/measure/bench_network.hpp).
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

namespace fabtrain::bench {

struct Repetitions {
  int min_reps = 3;
  int max_reps = 20;
  double budget_s = 1.0;  // stop adding repetitions after this much time (warm-up included)
};

inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The q-quantile (0..1) by linear interpolation between order statistics; 0 when empty.
inline double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double at = q * double(values.size() - 1);
  const std::size_t lo = std::size_t(at), hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (at - double(lo)) * (values[hi] - values[lo]);
}

template <typename Fn>
double seconds_of(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median seconds of fn() over the repetitions (after one untimed warm-up).
template <typename Fn>
double median_seconds(Fn&& fn, const Repetitions& reps) {
  double spent = seconds_of(fn);
  std::vector<double> times;
  while (int(times.size()) < reps.max_reps &&
         (int(times.size()) < reps.min_reps || spent < reps.budget_s)) {
    times.push_back(seconds_of(fn));
    spent += times.back();
  }
  return median(times);
}

}  // namespace fabtrain::bench
