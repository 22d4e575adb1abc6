// The emulator's command line: one CLI11 table gives both the parser and --help. Values are
// checked here (ranges, interface names differ) so the forwarding code can trust them.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "direction.hpp"

namespace fabtrain::wan {

struct WanOptions {
  std::string interface_a;
  std::string interface_b;
  double delay_ms = 0;
  double rate_mbit = 0;  // 0 = unlimited
  double queue_kb = -1;  // -1 = 20 ms at the rate, at least 256 KiB
  int buffers = 16384;
  int batch = 64;
  double send_ahead_us = 20;
  int receive_buffer_mb = 32;
  bool no_realtime = false;
  std::string stats_path;
  double max_late_fraction = 0.01;  // more frames late than this: the run is not valid

  // The per-direction settings these options describe.
  DirectionSettings direction_settings() const;
  int64_t queue_limit_bytes() const;
};

void add_wan_options(CLI::App& app, WanOptions& options);
// Checks relations between options; throws fabtrain::Error naming the option and the rule.
void validate(const WanOptions& options);

}  // namespace fabtrain::wan
