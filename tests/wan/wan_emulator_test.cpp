// Unit tests of the WAN emulator's pure parts: the link model (delay, serialisation, drop-tail)
// and the lateness statistics. The end-to-end check with namespaces is two_site_test.sh.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "lateness_stats.hpp"
#include "link_model.hpp"
#include "wan_options.hpp"

using namespace fabtrain::wan;

TEST_CASE("unlimited rate: every frame leaves exactly one delay after it arrived") {
  LinkModel link({.delay_ns = 25'000'000, .rate_bits_per_s = 0, .queue_limit_bytes = 0});
  CHECK(link.admit(1'000, 1500) == 25'001'000);
  CHECK(link.admit(1'000, 1500) == 25'001'000);  // no serialisation, no queue
  CHECK(link.admit(7'000'000, 64) == 32'000'000);
}

TEST_CASE("a rate serialises back-to-back frames and adds the delay after") {
  // 1 Gbit/s: 1250 bytes take 10 us.
  LinkModel link({.delay_ns = 5'000'000, .rate_bits_per_s = 1e9, .queue_limit_bytes = 1 << 20});
  CHECK(link.admit(0, 1250) == 10'000 + 5'000'000);
  CHECK(link.admit(0, 1250) == 20'000 + 5'000'000);  // waits behind the first
  CHECK(link.backlog_bytes(0) == 2500);
  CHECK(link.backlog_bytes(15'000) == 625);
  // After the serialiser went idle, a frame starts at its own arrival.
  CHECK(link.admit(1'000'000, 1250) == 1'010'000 + 5'000'000);
}

TEST_CASE("drop-tail: a frame that does not fit behind the queue is dropped, later ones pass") {
  LinkModel link({.delay_ns = 0, .rate_bits_per_s = 8e6, .queue_limit_bytes = 3000});  // 1 byte/us
  CHECK(link.admit(0, 1500).has_value());
  CHECK(link.admit(0, 1500).has_value());
  CHECK_FALSE(link.admit(0, 1500).has_value());      // 3000 queued + 1500 > 3000
  CHECK_FALSE(link.admit(1'000, 1500).has_value());  // 2999 still queued after 1 us... still full
  const auto later = link.admit(1'500'000, 1500);    // 1500 us later: 1500 left, fits
  REQUIRE(later.has_value());
  CHECK(*later == 3'000'000 + 1'500'000);  // behind the two accepted frames
}

TEST_CASE("lateness quantiles, maximum and the late > 1 ms count") {
  LatenessStats stats;
  for (int i = 0; i < 98; ++i) stats.record_sent(3'500, 100);  // 3.5 us
  stats.record_sent(2'000'000, 100);                           // 2 ms: late
  stats.record_sent(250'000'000, 100);                         // beyond the histogram
  stats.record_sent(-5'000, 100);                              // sent early: counts as 0
  CHECK(stats.forwarded() == 101);
  CHECK(stats.forwarded_bytes() == 10100);
  CHECK(stats.late() == 2);
  CHECK(stats.quantile_ns(0.5) == 3'000);
  CHECK(stats.quantile_ns(0.99) == 2'000'000);
  CHECK(stats.quantile_ns(1.0) == 250'000'000);
  CHECK(stats.max_ns() == 250'000'000);
  LatenessStats total;
  total.add(stats);
  total.add(stats);
  CHECK(total.forwarded() == 202);
  CHECK(total.to_json()["late_over_1ms"] == 4);
}

TEST_CASE("a run is not valid when more than the fraction, and ten frames at least, left late") {
  auto stats_of = [](int frames, int late) {
    LatenessStats stats;
    for (int i = 0; i < frames; ++i) stats.record_sent(i < late ? 2'000'000 : 3'000, 100);
    return stats;
  };
  CHECK(stats_of(100, 10).too_late(0.01));         // 10%
  CHECK_FALSE(stats_of(100, 9).too_late(0.01));    // 9%, but fewer than ten late
  CHECK_FALSE(stats_of(2000, 10).too_late(0.01));  // ten late, but 0.5%
  CHECK(stats_of(2000, 30).too_late(0.01));        // 1.5%
  CHECK_FALSE(stats_of(2000, 30).too_late(0.02));
  CHECK_FALSE(stats_of(0, 0).too_late(0.0));
}

TEST_CASE("options: bad values are refused with the option named") {
  auto parse = [](std::vector<std::string> args) {
    CLI::App app;
    WanOptions options;
    add_wan_options(app, options);
    std::reverse(args.begin(), args.end());
    app.parse(args);
    validate(options);
    return options;
  };
  const auto ok =
      parse({"--iface-a", "wA", "--iface-b", "wB", "--delay-ms", "25", "--rate-mbit", "1000"});
  CHECK(ok.direction_settings().link.delay_ns == 25'000'000);
  CHECK(ok.queue_limit_bytes() == 2'500'000);  // 20 ms at 1 Gbit/s
  CHECK(ok.max_late_fraction == 0.01);
  CHECK_THROWS_AS(parse({"--iface-a", "wA", "--iface-b", "wB", "--max-late-fraction", "2"}),
                  CLI::ValidationError);
  CHECK_THROWS_AS(parse({"--iface-a", "wA"}), CLI::RequiredError);
  CHECK_THROWS_AS(parse({"--iface-a", "wA", "--iface-b", "wB", "--delay-ms", "-1"}),
                  CLI::ValidationError);
  CHECK_THROWS_AS(parse({"--iface-a", "wA", "--iface-b", "wB", "--delay-ms", "abc"}),
                  CLI::ParseError);
  CHECK_THROWS_WITH_AS(parse({"--iface-a", "wA", "--iface-b", "wA"}),
                       doctest::Contains("two different interfaces"), fabtrain::Error);
  CHECK_THROWS_WITH_AS(parse({"--iface-a", "wA", "--iface-b", "wB", "--queue-kb", "64"}),
                       doctest::Contains("--rate-mbit"), fabtrain::Error);
}
