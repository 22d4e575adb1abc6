// Fitting one link class's parameters from the point-to-point pairs of one or more bench files
// (e.g. one at no added delay and one over the long path):
//  - latency: the one-way latency of the shortest round trip seen, less the path's own one-way
//    delay during that bench (the simulator adds the slice's round trip / 2 on wide-area links);
//  - bandwidth: the highest stream bandwidth seen;
//  - window: a pair is window-limited when its bandwidth is under 80% of that highest one; then
//    window = bandwidth * RTT (median over such pairs), per stream (divided by the class's
//    streams per peer of the communicator that ran the bench, which the simulator multiplies back
//    by the streams of the slice's communicator). With no window-limited pair but a
//    long round trip (>= 10 ms) at full bandwidth, 0 (not window-limited). With only short round
//    trips nothing can be said: the window is left out and the slice's or catalog's stands.
// Not here: compute (calibrate/fit_compute.hpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "calibrate/inputs.hpp"
#include "platforms/catalog.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain::calib {

struct LinkFit {
  LinkCalibration link;
  bool measured = false;  // false: no bench had a pair of ranks
  int window_limited_pairs = 0;
  std::vector<std::string> notes;
};

inline constexpr double kWindowLimitedFraction = 0.8;
inline constexpr double kLongRoundTripS = 0.010;

// path_rtt_s: the round trip the path itself added during the bench with the shortest one
// (0 for an emulated link at no delay, or real sites' known RTT when benched between sites).
LinkFit fit_link(const std::vector<BenchData>& benches, const LinkClass& link_class,
                 int streams_per_peer, double path_rtt_s);

// The same, with the round trip each bench's path added (one per bench, same order): the
// latency is the smallest of (round trip - that path's) / 2 over all benches, so a bench over a
// long path can give it too. On a busy machine a short path's round trip can be inflated by
// scheduling (an 8 ms median at no added delay was seen on 2 shared cores); the smallest
// corrected one is the link's.
LinkFit fit_link_per_bench(const std::vector<BenchData>& benches, const LinkClass& link_class,
                           int streams_per_peer, const std::vector<double>& path_rtt_s);

// Inside one VM, a stream of a few MiB stays in the cache, while a step moves buffers of hundreds
// of MB from memory, reductions included: the bus bandwidth of the bench's largest collectives
// (median over the operations measured at that size) when they are larger than its point-to-point
// messages, else nothing. On the full-size validation's VM: 652 MB/s at 64 MiB against a 4.3 GB/s
// stream of 2 MiB.
std::optional<double> large_transfer_bandwidth(const BenchData& bench);

}  // namespace fabtrain::calib
