// How a TCP window bounds one long transfer: min(line rate, window / RTT) once past the first
// window, with no line-rate time paid again on top of each round trip.
#include <doctest/doctest.h>

#include "sim/tcp_window.hpp"

using namespace fabtrain;

TEST_CASE("tcp window: a long transfer moves at window / RTT when that is under the line rate") {
  const double line = 125e6, window = 2.96e6, rtt = 0.103, bytes = 355e6;  // 1 Gbit/s, 103 ms
  const double seconds = window_limited_seconds(bytes, window, rtt, line);
  CHECK(seconds == doctest::Approx(window / line + (bytes - window) / (window / rtt)));
  CHECK(bytes / seconds == doctest::Approx(window / rtt).epsilon(0.01));  // 28.7 MB/s, not 23
  // A window wider than the path's bandwidth-delay product: the line rate, continuously.
  CHECK(window_limited_seconds(bytes, 4e6, 0.01, line) == doctest::Approx(bytes / line));
  // Within one window: the line rate; no window or no round trip: the line rate.
  CHECK(window_limited_seconds(1e6, window, rtt, line) == doctest::Approx(1e6 / line));
  CHECK(window_limited_seconds(bytes, 0, rtt, line) == doctest::Approx(bytes / line));
  CHECK(window_rate_cap(bytes, window, rtt, line) == doctest::Approx(bytes / seconds));
  CHECK(window_rate_cap(1e6, window, rtt, line) == 0);
}
