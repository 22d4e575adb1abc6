// Command-line table and checks of fabtrain-wan (see wan_options.hpp).
#include "wan_options.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace fabtrain::wan {

void add_wan_options(CLI::App& app, WanOptions& o) {
  app.add_option("--iface-a", o.interface_a, "interface towards site A (in this namespace)")
      ->required();
  app.add_option("--iface-b", o.interface_b, "interface towards site B (in this namespace)")
      ->required();
  app.add_option("--delay-ms", o.delay_ms, "one-way delay added in each direction, ms")
      ->check(CLI::Range(0.0, 10000.0))
      ->capture_default_str();
  app.add_option("--rate-mbit", o.rate_mbit,
                 "serialisation rate of each direction, Mbit/s (0 = unlimited, no queue)")
      ->check(CLI::Range(0.0, 100000.0))
      ->capture_default_str();
  app.add_option("--queue-kb", o.queue_kb,
                 "drop-tail queue in front of the serialiser, KiB (default: 20 ms at the rate, "
                 "at least 256)")
      ->check(CLI::Range(1.0, 1048576.0));
  app.add_option("--buffers", o.buffers, "frames in flight per direction, at most")
      ->check(CLI::Range(64, 1 << 20))
      ->capture_default_str();
  app.add_option("--batch", o.batch, "frames per recvmmsg/sendmmsg call")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--send-ahead-us", o.send_ahead_us,
                 "frames due within this many us are sent together (that much early)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  app.add_option("--rcvbuf-mb", o.receive_buffer_mb, "packet socket receive buffer, MiB")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_flag("--no-realtime", o.no_realtime, "do not ask for SCHED_FIFO");
  app.add_option("--max-late-fraction", o.max_late_fraction,
                 "when stopped, say the run is not valid if more than this fraction of the frames "
                 "(and at least 10) left more than 1 ms late")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--stats", o.stats_path,
                 "write the statistics (JSON) to this file when stopped by SIGTERM or SIGINT");
}

void validate(const WanOptions& o) {
  if (o.interface_a == o.interface_b)
    fail("--iface-a and --iface-b are both '{}': the link needs two different interfaces",
         o.interface_a);
  if (o.queue_kb > 0 && o.rate_mbit == 0)
    fail("--queue-kb={} needs --rate-mbit > 0: without a rate limit nothing queues", o.queue_kb);
}

int64_t WanOptions::queue_limit_bytes() const {
  if (queue_kb > 0) return static_cast<int64_t>(queue_kb * 1024);
  const double twenty_ms_bytes = rate_mbit * 1e6 / 8 * 0.020;
  return static_cast<int64_t>(std::max(twenty_ms_bytes, 256.0 * 1024));
}

DirectionSettings WanOptions::direction_settings() const {
  DirectionSettings s;
  s.link.delay_ns = static_cast<int64_t>(std::llround(delay_ms * 1e6));
  s.link.rate_bits_per_s = rate_mbit * 1e6;
  s.link.queue_limit_bytes = queue_limit_bytes();
  s.buffer_count = buffers;
  s.batch = batch;
  s.send_ahead_ns = static_cast<int64_t>(std::llround(send_ahead_us * 1e3));
  s.realtime = !no_realtime;
  return s;
}

}  // namespace fabtrain::wan
