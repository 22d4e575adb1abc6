// How a TCP window limits one transfer over a long path: the first window of bytes leaves in one
// flight at the path's line rate, every further window waits one round trip for its
// acknowledgements. So a transfer no larger than the window costs its bytes at line rate (plus
// the path's latency, which the flows pay anyway), and a long one tends to window / RTT.
// (Measured on the emulated link: a 3.4 MB all-reduce at 100 ms round trip took the same as a
// 0.5 MB one, where a flat window / RTT cap predicted 0.1 s more.)
// Not here: slow start (connections are long-lived and stay warm; scripts/wan/up.sh turns off
// the restart after idle, as long-path tuning does) or losses.
#pragma once
#include <algorithm>

namespace fabtrain {

// Seconds to move `bytes` once the first byte leaves, through a window of `window` bytes (all of a
// peer's streams together) over round trip `rtt`, at `line_rate` bytes/s (0: unlimited). Each
// further window leaves when the acknowledgements of the one before return, a round trip after it
// left, or when its own bytes have passed at line rate if that takes longer: a long transfer moves
// at min(line rate, window / RTT), the rate the calibration's window (bandwidth x RTT) stands for.
// (Paying the line-rate time of every byte on top of a round trip per window, as this did before,
// played the 1.4 GB all-reduce of GPT-2 medium over 103 ms at 23 MB/s where 27.5 were measured.)
inline double window_limited_seconds(double bytes, double window, double rtt, double line_rate) {
  const double at_line = line_rate > 0 ? bytes / line_rate : 0.0;
  if (window <= 0 || rtt <= 0 || bytes <= window) return at_line;
  const double first_window = line_rate > 0 ? window / line_rate : 0.0;
  return first_window + (bytes - window) / window * std::max(rtt, first_window);
}

// The rate cap that makes a flow of `bytes` take window_limited_seconds, or 0 (no cap) when the
// window does not limit it.
inline double window_rate_cap(double bytes, double window, double rtt, double line_rate) {
  if (window <= 0 || rtt <= 0 || bytes <= window) return 0.0;
  return bytes / window_limited_seconds(bytes, window, rtt, line_rate);
}

}  // namespace fabtrain
