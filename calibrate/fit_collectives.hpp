// Fitting the simulator's per-op collective correction (sim/cost/calibration.hpp, collectives:)
// from measured collective calls: for each op, least squares of the measured seconds against the
// three terms the simulator adds, t ~ latency_terms * latency_s + bandwidth_factor * bytes /
// bandwidth
// + overhead_s, with latency_s and bandwidth those of the path each call ran over. Residuals are
// relative: a 1 ms call at no added delay weighs as much as a 150 ms one over a long path, so the
// per-call overhead is seen. Bounds: latency_terms >= 1, bandwidth_factor >= 0, overhead_s >= 0
// (the best feasible fit with some of them held at their bounds).
// Not here: where the samples come from (apps/fabtrain/cmd_calibrate.cpp: bench files' collective
// sweeps and run records' calls), or how the simulator plays the result.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/inputs.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain::calib {

struct CollectiveTiming {
  CollectiveOp op = CollectiveOp::all_reduce;
  double bytes = 0;
  double seconds = 0;
  double latency_s = 0;  // one-way latency of the path the call ran over
  double bandwidth = 0;  // one flow of `bytes` on that path: bytes / its transfer seconds
  int members = 2;       // ranks in the call (the fit is of a two-rank call's terms)
};

// A path as the simulator sees it (sim/tcp_window.hpp): a flow within the window goes at line
// rate, a longer one tends to window / RTT.
struct CollectivePath {
  double latency_s = 0;             // one way
  double line_rate = 0;             // bytes/s
  double window = 0;                // bytes in flight over all streams to the peer; 0: none
  double rate(double bytes) const;  // bytes / seconds to move them
};

// A call measured shorter than this many one-way latencies is left out: the last member's data
// must still cross the path, so such a time says the ranks' step clocks disagreed, not that the
// call was fast.
inline constexpr double kFewestLatencies = 0.5;

// A small call whose path latency is less than this share of its time says little about the
// latency terms (its time is the library's own overhead): the small calls' latency coefficient
// is fitted on the others when there are any. (A 2-rank 8-byte all-reduce took 83 us over the
// path without added delay, 8 us one way; weighted by its relative residual it outweighed the
// same call over 50 ms, which took two latencies, and held the coefficient at 1.)
inline constexpr double kLatencyShare = 0.25;

struct CollectiveFit {
  CollectiveCalibration correction;
  int samples = 0;          // calls larger than small_bytes
  int small_samples = 0;    // calls of at most small_bytes
  double rms_relative = 0;  // of the fitted formula against the samples
};

// Ops with fewer than 3 samples, or whose samples cannot separate the terms, are left out.
// Calls of at most small_bytes (0: none) are fitted apart: their own latency terms
// (small_latency_terms), with the overhead and bandwidth factor of the larger calls.
// reduce_scatter_via_root: the communicator's reduce-scatter goes via the group's root (its calls
// of more than two ranks scale as via_root_volume_scale, not as a ring).
std::map<CollectiveOp, CollectiveFit> fit_collectives(const std::vector<CollectiveTiming>& timings,
                                                      double small_bytes = 0,
                                                      bool reduce_scatter_via_root = false);

// The collective op a bench or run record names (all_reduce, reduce_scatter, all_gather), or
// false for anything else.
bool collective_op(const std::string& name, CollectiveOp& op);

// The calls recorded by at least two members in a run's timed steps (all but the first, which
// warms up, when there are more), over one path.
std::vector<CollectiveTiming> run_collective_timings(const RunData& run,
                                                     const CollectivePath& path);
// Point-to-point messages of a bench file's ping-pongs (message_latencies), over one path: the
// one-way time of each size.
struct MessageTiming {
  double bytes = 0, seconds = 0, latency_s = 0, bandwidth = 0;
};
std::vector<MessageTiming> bench_message_timings(const BenchData& bench,
                                                 const CollectivePath& path);
// The p2p correction (sim/cost/calibration.hpp, p2p:) from message timings over at least two paths:
// t - bytes / bandwidth ~ latency_terms * latency_s + overhead_s, least squares of relative
// residuals, latency_terms >= 1, overhead_s >= 0. Nothing when the paths cannot separate them.
std::optional<P2pCalibration> fit_p2p(const std::vector<MessageTiming>& timings);

// A bench file's collective sweep, over one path.
std::vector<CollectiveTiming> bench_collective_timings(const BenchData& bench,
                                                       const CollectivePath& path);

}  // namespace fabtrain::calib
