// The collective correction fit: recovers known latency terms and bandwidth factors from
// synthetic calls over two paths, respects its bounds, and reads the calls of a run record
// (last arrival to last end, matched by name and occurrence).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "calibrate/fit_collectives.hpp"
#include "common/error.hpp"
#include "sim/cost/calibration_file.hpp"

using namespace fabtrain;
using namespace fabtrain::calib;

namespace {

// Calls of `op` at several sizes over a short and a long path, timed by the formula the
// simulator plays, with a +-2% alternating perturbation.
std::vector<CollectiveTiming> synthetic(CollectiveOp op, double terms, double factor,
                                        double overhead = 0) {
  std::vector<CollectiveTiming> out;
  int i = 0;
  for (const auto& [latency, bandwidth] : {std::pair{1e-4, 1e9}, std::pair{0.05, 2e8}})
    for (double bytes : {4.0, 65536.0, 1e6, 4.5e6, 3e7}) {
      const double t = overhead + terms * latency + factor * bytes / bandwidth;
      out.push_back({op, bytes, t * (i++ % 2 ? 1.02 : 0.98), latency, bandwidth});
    }
  return out;
}

}  // namespace

TEST_CASE("the collective fit recovers known parameters per op") {
  auto timings = synthetic(CollectiveOp::all_reduce, 1.2, 0.5);
  const auto rs = synthetic(CollectiveOp::reduce_scatter, 4.0, 1.5);
  timings.insert(timings.end(), rs.begin(), rs.end());
  const auto fits = fit_collectives(timings);
  REQUIRE(fits.size() == 2);
  CHECK(fits.at(CollectiveOp::all_reduce).correction.latency_terms ==
        doctest::Approx(1.2).epsilon(0.03));
  CHECK(fits.at(CollectiveOp::all_reduce).correction.bandwidth_factor ==
        doctest::Approx(0.5).epsilon(0.03));
  CHECK(fits.at(CollectiveOp::reduce_scatter).correction.latency_terms ==
        doctest::Approx(4.0).epsilon(0.03));
  CHECK(fits.at(CollectiveOp::reduce_scatter).correction.bandwidth_factor ==
        doctest::Approx(1.5).epsilon(0.03));
  CHECK(fits.at(CollectiveOp::reduce_scatter).samples == 10);
  CHECK(fits.at(CollectiveOp::reduce_scatter).rms_relative == doctest::Approx(0.02).epsilon(0.2));
  CHECK_FALSE(fits.count(CollectiveOp::all_gather));
}

TEST_CASE("the collective fit recovers a per-call overhead that does not grow with the path") {
  const auto fits = fit_collectives(synthetic(CollectiveOp::all_reduce, 2.5, 0.7, 1e-3));
  REQUIRE(fits.count(CollectiveOp::all_reduce));
  const auto& c = fits.at(CollectiveOp::all_reduce).correction;
  CHECK(c.overhead_s == doctest::Approx(1e-3).epsilon(0.1));
  CHECK(c.latency_terms == doctest::Approx(2.5).epsilon(0.05));
  CHECK(c.bandwidth_factor == doctest::Approx(0.7).epsilon(0.05));
  // Without an overhead in the calls, none is fitted.
  CHECK(fit_collectives(synthetic(CollectiveOp::all_reduce, 2.5, 0.7))
            .at(CollectiveOp::all_reduce)
            .correction.overhead_s < 2e-5);
}

TEST_CASE("small calls get their own latency terms, the larger ones keep theirs") {
  std::vector<CollectiveTiming> timings;
  for (const auto& t : synthetic(CollectiveOp::all_reduce, 2.5, 0.7, 1e-3))
    if (t.bytes > 4096) timings.push_back(t);
  // Calls of at most 4 KiB played as one exchange: one latency plus the overhead.
  for (double latency : {1e-4, 0.05})
    for (double bytes : {4.0, 1024.0})
      timings.push_back({CollectiveOp::all_reduce, bytes, 1e-3 + latency, latency, 1e9});
  const auto fits = fit_collectives(timings, 4096);
  REQUIRE(fits.count(CollectiveOp::all_reduce));
  const auto& f = fits.at(CollectiveOp::all_reduce);
  CHECK(f.small_samples == 2);  // over the short path the latency is 9% of the call: left out
  CHECK(f.correction.small_bytes == 4096);
  CHECK(f.correction.small_latency_terms == doctest::Approx(1.0).epsilon(0.05));
  CHECK(f.correction.latency_terms == doctest::Approx(2.5).epsilon(0.05));
  CHECK(f.rms_relative < 0.05);
  CHECK(f.rms_relative > 0);  // the synthetic calls carry +-2% noise
}

TEST_CASE("a small call the path's latency barely shows in does not set the small calls' terms") {
  std::vector<CollectiveTiming> timings;
  for (const auto& t : synthetic(CollectiveOp::all_reduce, 2.2, 1.1))
    if (t.bytes > 4096) timings.push_back(t);
  // As measured (2 ranks, 8 bytes): 0.1 ms over the path with 8 us one way (the library's own
  // time), two one-way latencies over 50 ms.
  timings.push_back({CollectiveOp::all_reduce, 8, 1e-4, 8e-6, 1e9});
  timings.push_back({CollectiveOp::all_reduce, 8, 0.1001, 0.05, 1e9});
  const auto fits = fit_collectives(timings, 4096);
  const auto& f = fits.at(CollectiveOp::all_reduce);
  CHECK(f.small_samples == 1);
  CHECK(f.correction.small_latency_terms == doctest::Approx(2.0).epsilon(0.03));
  // Only calls the latency barely shows in: they are all there is to fit on.
  timings.pop_back();
  const auto only_near = fit_collectives(timings, 4096);
  const auto& g = only_near.at(CollectiveOp::all_reduce);
  CHECK(g.small_samples == 1);
  CHECK(g.correction.small_latency_terms >= 1.0);
}

TEST_CASE("the p2p fit recovers latency terms and overhead from ping-pongs over two paths") {
  std::vector<MessageTiming> timings;
  for (double latency : {2e-5, 0.05})
    for (double bytes : {32768.0, 131072.0})
      timings.push_back({bytes, 3e-4 + 1.4 * latency + bytes / 1e8, latency, 1e8});
  const auto p2p = fit_p2p(timings);
  REQUIRE(p2p);
  CHECK(p2p->latency_terms == doctest::Approx(1.4).epsilon(0.01));
  CHECK(p2p->overhead_s == doctest::Approx(3e-4).epsilon(0.01));
  // Faster than one latency: terms held at 1.
  for (auto& t : timings) t.seconds = 0.8 * t.latency_s + t.bytes / 1e8;
  REQUIRE(fit_p2p(timings));
  CHECK(fit_p2p(timings)->latency_terms == 1.0);
  CHECK_FALSE(fit_p2p({timings[0]}));  // one sample separates nothing
}

TEST_CASE("the collective fit keeps latency_terms >= 1 and bandwidth_factor >= 0") {
  // Calls faster than one latency: the free fit would give 0.5 terms; held at 1.
  const auto fast = fit_collectives(synthetic(CollectiveOp::all_gather, 0.5, 2.0));
  REQUIRE(fast.count(CollectiveOp::all_gather));
  CHECK(fast.at(CollectiveOp::all_gather).correction.latency_terms == 1.0);
  CHECK(fast.at(CollectiveOp::all_gather).correction.bandwidth_factor >= 0);
  // Two samples cannot separate the three terms: no fit.
  CHECK(fit_collectives({{CollectiveOp::all_reduce, 1e6, 0.01, 1e-3, 1e9},
                         {CollectiveOp::all_reduce, 2e6, 0.02, 1e-3, 1e9}})
            .empty());
}

TEST_CASE("fitted corrections round-trip through the calibration YAML") {
  Calibration cal;
  cal.collectives[CollectiveOp::all_reduce] = {1.23456789012345, 0.5};
  cal.collectives[CollectiveOp::all_gather] = {2.0, 0.0};
  const auto path = (std::filesystem::temp_directory_path() / "fabtrain-calib-coll.yaml").string();
  write_calibration(cal, {"collectives"}, path);
  const Calibration back = load_calibration(path);
  REQUIRE(back.collectives.size() == 2);
  CHECK(back.collectives.at(CollectiveOp::all_reduce).latency_terms == 1.23456789012345);
  CHECK(back.collectives.at(CollectiveOp::all_reduce).bandwidth_factor == 0.5);
  CHECK(back.collectives.at(CollectiveOp::all_gather).bandwidth_factor == 0.0);
  std::filesystem::remove(path);
}

TEST_CASE("a run record's collective calls: last arrival to last end, per occurrence") {
  const auto path =
      (std::filesystem::temp_directory_path() / "fabtrain-calib-coll-run.jsonl").string();
  auto item = [](int rank, int index, const char* kind, const char* name, double bytes,
                 double start, double d) {
    return fmt::format(
        R"({{"rank":{},"index":{},"kind":"{}","name":"{}","start_s":{},"duration_s":{},"bytes":{},"peers":[]}})",
        rank, index, kind, name, start, d, bytes);
  };
  // Rank 0 arrives first at each call and waits; rank 1 arrives later; they end close together.
  auto step = [&](int n, double first) {
    return fmt::format(
        R"({{"type":"step","step":{},"wall_s":0.1,"instructions":[{},{},{},{},{},{}]}})", n,
        item(0, 0, "all_reduce", "all_reduce g group=0 bytes=1000", 1000, 0.0, first),
        item(0, 1, "all_reduce", "all_reduce g group=0 bytes=1000", 1000, 0.05, 0.02),
        item(0, 2, "reduce_scatter", "reduce_scatter p group=0 bytes=64", 64, 0.08, 0.004),
        item(1, 0, "all_reduce", "all_reduce g group=0 bytes=1000", 1000, 0.01, 0.003),
        item(1, 1, "all_reduce", "all_reduce g group=0 bytes=1000", 1000, 0.06, 0.012),
        item(1, 2, "reduce_scatter", "reduce_scatter p group=0 bytes=64", 64, 0.08, 0.005));
  };
  {
    std::ofstream out(path);
    out << R"({"type":"header","plan":"dp=2","world":2,"model":{"name":"m"}})"
        << "\n"
        << step(0, 0.5) << "\n"
        << step(1, 0.0125) << "\n";
  }
  const RunData run = read_run_record(path);
  REQUIRE(run.steps.size() == 2);
  REQUIRE(run.steps[1].collectives.size() == 3);
  // First call: the last arrival is rank 1's at 0.01, the last end rank 1's at 0.013.
  CHECK(run.steps[1].collectives[0].seconds == doctest::Approx(0.003));
  // The second occurrence, matched apart: last arrival 0.06, last end 0.072 (rank 1).
  CHECK(run.steps[1].collectives[1].seconds == doctest::Approx(0.012));
  CHECK(run.steps[1].collectives[2].op == "reduce_scatter");
  CHECK(run.steps[1].collectives[2].seconds == doctest::Approx(0.005));
  CHECK(run.steps[1].collectives[2].members == 2);
  // Step 0: rank 0's first call ends at 0.5, long after rank 1 arrived at 0.01.
  CHECK(run.steps[0].collectives[0].seconds == doctest::Approx(0.49));
  // The first (warm-up) step is left out of the timings.
  const auto timings = run_collective_timings(run, {1e-3, 1e9, 0});
  REQUIRE(timings.size() == 3);
  CHECK(timings[0].bandwidth == doctest::Approx(1e9));  // no window: line rate
  CHECK(timings[0].seconds == doctest::Approx(0.003));
  CHECK(timings[2].op == CollectiveOp::reduce_scatter);
  CHECK(timings[2].latency_s == 1e-3);
  std::filesystem::remove(path);
}

TEST_CASE("a call's path rate is line rate within the window and tends to window / RTT beyond it") {
  const CollectivePath path{0.05, 1e9, 4e6};  // 100 ms round trip, 4 MB in flight
  CHECK(path.rate(1e6) == doctest::Approx(1e9));
  CHECK(path.rate(4e6) == doctest::Approx(1e9));
  // 400 MB: the first window at line rate (4 ms), then 99 more windows of a round trip each.
  CHECK(path.rate(400e6) == doctest::Approx(400e6 / (0.004 + 9.9)));
  CHECK(path.rate(400e6) == doctest::Approx(4e6 / 0.1).epsilon(0.01));  // window / RTT
}

TEST_CASE("a reduce-scatter via the root is fitted with its own growth over four ranks") {
  // Two-rank calls over the short path, four-rank calls over the long one (as the full-size
  // validation benches them), timed by the via-root shape: over four ranks the buffer and a
  // quarter of it cross, against a two-rank call's one and a half.
  std::vector<CollectiveTiming> timings;
  const double terms = 2.0, factor = 1.4, overhead = 1e-3;
  int i = 0;
  for (const auto& [latency, bandwidth, members] :
       {std::tuple{1e-4, 1e9, 2}, std::tuple{0.05, 2e8, 4}})
    for (double bytes : {65536.0, 1e6, 4.5e6, 3e7, 6e7}) {
      const double t =
          overhead + terms * latency + factor * bytes / bandwidth * via_root_volume_scale(members);
      timings.push_back({CollectiveOp::reduce_scatter, bytes, t * (i++ % 2 ? 1.01 : 0.99), latency,
                         bandwidth, members});
    }
  const auto via_root = fit_collectives(timings, 0, true).at(CollectiveOp::reduce_scatter);
  CHECK(via_root.correction.bandwidth_factor == doctest::Approx(factor).epsilon(0.03));
  CHECK(via_root.correction.latency_terms == doctest::Approx(terms).epsilon(0.05));
  // Read as a ring, the four-rank calls say another factor and fit worse.
  const auto ring = fit_collectives(timings, 0, false).at(CollectiveOp::reduce_scatter);
  CHECK(ring.correction.bandwidth_factor < 0.95 * factor);
  CHECK(ring.rms_relative > 2 * via_root.rms_relative);
}
