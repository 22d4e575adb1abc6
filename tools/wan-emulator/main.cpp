// fabtrain-wan: emulates a wide-area link between two interfaces of one network namespace
// (normally "wan", between the veth ends of namespaces siteA and siteB; see scripts/wan/up.sh).
// main() reads as the data flow: options; open both packet sockets; one thread per direction;
// wait for SIGTERM/SIGINT; stop; report. It is test tooling, not a general network emulator:
// no jitter, loss or reordering, one link only.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/error.hpp"
#include "direction.hpp"
#include "wan_options.hpp"

using namespace fabtrain;
using namespace fabtrain::wan;

namespace {

nlohmann::json report_json(const WanOptions& o, const Direction& a_to_b, const Direction& b_to_a,
                           const LatenessStats& total) {
  return {
      {"delay_ms", o.delay_ms},
      {"rate_mbit", o.rate_mbit},
      {"queue_bytes", o.queue_limit_bytes()},
      {"scheduling", a_to_b.scheduling_note()},
      {"total", total.to_json()},
      {"directions",
       {{a_to_b.name(), a_to_b.stats().to_json()}, {b_to_a.name(), b_to_a.stats().to_json()}}},
  };
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  std::ofstream out(temporary);
  out << text << "\n";
  out.close();
  if (!out || std::rename(temporary.c_str(), path.c_str()) != 0)
    fail("cannot write the statistics file '{}'", path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fabtrain-wan: forward Ethernet frames between two interfaces with a one-way delay and a "
      "rate limit, and report how late frames left (stop with SIGTERM or SIGINT)"};
  WanOptions options;
  add_wan_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    validate(options);
    // Block the stop signals before any thread exists: only sigwait() below receives them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    const int receive_buffer = options.receive_buffer_mb * 1024 * 1024;
    PacketSocket side_a(options.interface_a, receive_buffer);
    PacketSocket side_b(options.interface_b, receive_buffer);
    const DirectionSettings settings = options.direction_settings();
    Direction a_to_b(options.interface_a + "->" + options.interface_b, side_a, side_b, settings);
    Direction b_to_a(options.interface_b + "->" + options.interface_a, side_b, side_a, settings);

    std::atomic<bool> stop{false};
    std::mutex error_mutex;
    std::string thread_error;
    auto body = [&](Direction& direction) {
      try {
        direction.run(stop);
      } catch (const std::exception& e) {
        std::lock_guard lock(error_mutex);
        thread_error = fmt::format("{}: {}", direction.name(), e.what());
        kill(getpid(), SIGTERM);  // wakes main's sigwait
      }
    };
    std::thread forward(body, std::ref(a_to_b));
    std::thread backward(body, std::ref(b_to_a));
    fmt::print(
        "fabtrain-wan: ready {} <-> {}, one-way delay {} ms, rate {}, queue {} KiB, "
        "send-ahead {} us\n",
        options.interface_a, options.interface_b, options.delay_ms,
        options.rate_mbit > 0 ? fmt::format("{} Mbit/s", options.rate_mbit) : "unlimited",
        options.queue_limit_bytes() / 1024, options.send_ahead_us);
    std::fflush(stdout);

    int received_signal = 0;
    sigwait(&stop_signals, &received_signal);
    stop = true;
    forward.join();
    backward.join();

    LatenessStats total;
    total.add(a_to_b.stats());
    total.add(b_to_a.stats());
    fmt::print("fabtrain-wan: stopped by signal {} ({})\n", received_signal,
               a_to_b.scheduling_note());
    fmt::print("fabtrain-wan: {}: {}\n", a_to_b.name(), a_to_b.stats().summary());
    fmt::print("fabtrain-wan: {}: {}\n", b_to_a.name(), b_to_a.stats().summary());
    fmt::print("fabtrain-wan: total: {}\n", total.summary());
    if (total.too_late(options.max_late_fraction))  // scripts/wan/run.sh reads this line
      fmt::print("fabtrain-wan: not valid: {} of {} frames left more than 1 ms late (> {:g})\n",
                 total.late(), total.forwarded(), options.max_late_fraction);
    std::fflush(stdout);
    if (!options.stats_path.empty())
      write_file_atomically(options.stats_path,
                            report_json(options, a_to_b, b_to_a, total).dump(2));
    if (!thread_error.empty()) fail("{}", thread_error);
    return 0;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "fabtrain-wan: error: %s\n", e.what());
    return 1;
  }
}
