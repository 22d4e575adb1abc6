// Link-class fit: latency from the shortest round trip, bandwidth from the best stream, and the
// per-flow window detected from window-limited pairs.
#include <doctest/doctest.h>

#include "bench_doc.hpp"
#include "calibrate/fit_links.hpp"
#include "common/error.hpp"

using namespace fabtrain;

namespace {

calib::BenchData bench(std::vector<test::BenchPair> pairs, const char* name) {
  return calib::parse_bench(test::bench_doc(1e10, 1e10, pairs), name);
}

LinkClass l2sts() {
  LinkClass c;
  c.name = "l2sts";
  return c;
}

}  // namespace

TEST_CASE("window detected from a long path that runs under the short path's bandwidth") {
  const auto near = bench({{0.0003, 110e6}}, "0ms.json");
  const auto far = bench({{0.0503, 70e6}}, "25ms.json");
  const auto fit = calib::fit_link({near, far}, l2sts(), 4, 0);
  REQUIRE(fit.measured);
  CHECK(fit.window_limited_pairs == 1);
  CHECK(*fit.link.latency_s == doctest::Approx(0.00015));
  CHECK(*fit.link.bandwidth == doctest::Approx(110e6));
  // bandwidth x RTT, per stream of the class's four (the simulator multiplies back).
  CHECK(*fit.link.tcp_window_bytes == doctest::Approx(70e6 * 0.0503 / 4));
  const auto one_stream = calib::fit_link({near, far}, l2sts(), 1, 0);
  CHECK(*one_stream.link.tcp_window_bytes == doctest::Approx(70e6 * 0.0503));
}

TEST_CASE("full bandwidth over a long path: not window-limited (window 0)") {
  const auto fit =
      calib::fit_link({bench({{0.0003, 110e6}}, "a"), bench({{0.05, 105e6}}, "b")}, l2sts(), 1, 0);
  CHECK(fit.window_limited_pairs == 0);
  REQUIRE(fit.link.tcp_window_bytes.has_value());
  CHECK(*fit.link.tcp_window_bytes == 0);
}

TEST_CASE("only short round trips: the window is left unset, not guessed") {
  const auto fit = calib::fit_link({bench({{0.0003, 110e6}}, "a")}, l2sts(), 1, 0);
  CHECK(fit.measured);
  CHECK_FALSE(fit.link.tcp_window_bytes.has_value());
}

TEST_CASE("the path's own round trip is taken off the latency, no pairs keeps the catalog") {
  const auto fit = calib::fit_link({bench({{0.0104, 100e6}}, "a")}, l2sts(), 1, 0.010);
  CHECK(*fit.link.latency_s == doctest::Approx(0.0002));
  const auto none = calib::fit_link({bench({}, "single-rank")}, l2sts(), 1, 0);
  CHECK_FALSE(none.measured);
  CHECK_FALSE(none.link.latency_s.has_value());
  CHECK_THROWS_AS(calib::fit_link({bench({}, "x")}, l2sts(), 1, -1), Error);
}

TEST_CASE("per-bench path round trips: the smallest corrected round trip gives the latency") {
  // No added delay but a round trip inflated by scheduling (8 ms), and a 100 ms path seen at
  // 102 ms: the long path's 1 ms one way is the link's latency, not the short path's 4 ms.
  const auto near = bench({{0.008, 110e6}}, "near"), far = bench({{0.102, 30e6}}, "far");
  const auto fit = calib::fit_link_per_bench({near, far}, l2sts(), 1, {0.0, 0.100});
  CHECK(*fit.link.latency_s == doctest::Approx(0.001));
  CHECK(*fit.link.bandwidth == doctest::Approx(110e6));
  // With the path's round trip unknown the plain fit takes the short path's 4 ms.
  CHECK(*calib::fit_link({near, far}, l2sts(), 1, 0).link.latency_s == doctest::Approx(0.004));
  CHECK_THROWS_AS(calib::fit_link_per_bench({near, far}, l2sts(), 1, {0.0}), Error);
  CHECK_THROWS_AS(calib::fit_link_per_bench({near, far}, l2sts(), 1, {0.0, -0.1}), Error);
}

TEST_CASE("a bench over two sites of two ranks: the pairs inside one host are not the link") {
  // Ranks 0,1 on siteA and 2 on siteB: (0,1) is siteA's loopback, (0,2) and (1,2) cross the link.
  auto four = bench({{0.00002, 3e9}, {0.103, 28e6}, {0.103, 27e6}}, "4 ranks");
  const char* hosts[][2] = {{"siteA", "siteA"}, {"siteA", "siteB"}, {"siteA", "siteB"}};
  for (std::size_t i = 0; i < four.pairs.size(); ++i)
    four.pairs[i].host_a = hosts[i][0], four.pairs[i].host_b = hosts[i][1];
  REQUIRE(calib::pairs_across_hosts(four).size() == 2);
  const auto fit = calib::fit_link({bench({{0.0003, 110e6}}, "near"), four}, l2sts(), 1, 0);
  CHECK(*fit.link.bandwidth == doctest::Approx(110e6));  // not the loopback's 3 GB/s
  CHECK(*fit.link.latency_s == doctest::Approx(0.00015));
  CHECK(fit.window_limited_pairs == 2);
  // One VM's bench (every pair on one host) keeps its pairs: it samples that VM's own path.
  auto intra = bench({{0.00002, 3e9}}, "intra");
  intra.pairs[0].host_a = intra.pairs[0].host_b = "siteA";
  CHECK(calib::pairs_across_hosts(intra).size() == 1);
  CHECK(*calib::fit_link({intra}, l2sts(), 1, 0).link.bandwidth == doctest::Approx(3e9));
}

TEST_CASE(
    "inside one VM the largest collectives, not a cached stream, give large transfers' rate") {
  auto intra = bench({{0.00002, 4.3e9}}, "intra");
  intra.pairs[0].message_bytes = 2 << 20;
  CHECK_FALSE(calib::large_transfer_bandwidth(intra));  // no collective at all
  auto add = [&](const char* op, double bytes, double busbw) {
    intra.collectives.push_back({op, bytes, bytes / busbw, busbw, 2});
  };
  add("all_reduce", 1 << 20, 1.5e9);  // smaller than the stream's messages: not used
  CHECK_FALSE(calib::large_transfer_bandwidth(intra));
  add("all_reduce", 64 << 20, 652e6);
  add("reduce_scatter", 64 << 20, 211e6);
  add("all_gather", 64 << 20, 728e6);
  const auto large = calib::large_transfer_bandwidth(intra);
  REQUIRE(large);
  CHECK(*large == doctest::Approx(652e6));  // the median of the three at 64 MiB
}
