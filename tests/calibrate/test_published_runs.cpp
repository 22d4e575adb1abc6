// The published-runs file and its check: the shipped file loads whole (at least 20 runs, each
// with a source and a step time, a peak memory or an out-of-memory verdict), bad rows are
// reported by row and field while the good ones are kept, slices follow the stated hardware, a
// small run simulates, and peaks are compared in the kind the source measured.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "calibrate/check_published.hpp"
#include "calibrate/plan_comparison.hpp"
#include "models/costs.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

// One good row; `extra` replaces or adds keys at the row's level.
std::string row(const std::string& id, const std::string& hardware, const std::string& plan,
                const std::string& measured = "{step_time_s: 0.1, as_published: \"100 ms\"}") {
  return fmt::format(R"(  - id: {}
    source: "a test"
    url: https://example.org
    model: gpt2-nano
    seq: 64
    global_batch: 8
    plan: "{}"
    framework: test
    hardware: {}
    communicator: nccl-socket
    measured: {}
)",
                     id, plan, hardware, measured);
}

const std::string one_a100 = "{gpu: GPU_A100_80GB, nodes: 1, gpus_per_node: 1, intra_node: nvlink}";

}  // namespace

TEST_CASE(
    "the shipped file: at least 20 runs, all good, each with a source and a step time, a peak "
    "memory or an out-of-memory verdict") {
  const PublishedFile f = load_published_runs(builtin_published_runs_path());
  CHECK(f.problems.empty());
  for (const auto& p : f.problems) MESSAGE(p);
  CHECK(f.runs.size() >= 20);
  std::set<std::string> ids, gpus;
  for (const auto& r : f.runs) {
    CAPTURE(r.id);
    CHECK(ids.insert(r.id).second);  // ids are unique
    CHECK(!r.source.empty());
    CHECK(!r.url.empty());
    CHECK((r.measured.timed() || r.measured.peak_memory_bytes || r.measured.oom));
    CHECK(r.plan.ranks() == r.hardware.gpus());
    gpus.insert(r.hardware.gpu);
  }
  CHECK(gpus.size() >= 3);  // several GPU generations
}

TEST_CASE(
    "the shipped file: peak memories of every kind from several sources, and runs out of memory") {
  const PublishedFile f = load_published_runs(builtin_published_runs_path());
  std::set<std::string> kinds, sources;
  int peaks = 0, out_of_memory = 0, ran = 0;
  for (const auto& r : f.runs) {
    if (r.measured.peak_memory_bytes) {
      ++peaks;
      kinds.insert(to_string(r.measured.memory_kind));
      // the publisher: a site, or a repository on GitHub (https://github.com/owner/name)
      std::size_t end = r.url.find('/', 8);
      if (r.url.rfind("https://github.com/", 0) == 0)
        end = r.url.find('/', r.url.find('/', end + 1) + 1);
      sources.insert(r.url.substr(0, end));
    }
    out_of_memory += r.measured.oom.value_or(false);
    ran += r.measured.oom.has_value() && !*r.measured.oom;
  }
  CHECK(peaks >= 17);
  CHECK(kinds.size() >= 2);
  CHECK(sources.size() >= 5);
  CHECK(out_of_memory >= 5);
  CHECK(ran >= 5);
}

TEST_CASE("bad memory fields are named by row and field, and the other rows still checked") {
  test::TempDir dir("published");
  auto memory = [](const std::string& fields) {
    return "{as_published: \"a peak\", " + fields + "}";
  };
  const std::string text =
      "runs:\n" +
      row("good", one_a100, "dp=1", memory("peak_memory_gib: 2, memory_kind: reserved")) +
      row("kind", one_a100, "dp=1", memory("peak_memory_gib: 2, memory_kind: cached")) +
      row("no-kind", one_a100, "dp=1", memory("peak_memory_gib: 2")) +
      row("negative", one_a100, "dp=1", memory("peak_memory_gib: -2, memory_kind: allocated")) +
      row("nan", one_a100, "dp=1", memory("peak_memory_gib: .nan, memory_kind: allocated")) +
      row("over", one_a100, "dp=1", memory("peak_memory_gib: 81, memory_kind: device_used")) +
      row("oom-with-peak", one_a100, "dp=1",
          memory("peak_memory_gib: 2, memory_kind: allocated, oom: true")) +
      row("oom-row", one_a100, "dp=1", memory("oom: true"));
  const PublishedFile f = load_published_runs(dir.write("runs.yaml", text));
  CHECK(f.rows == 8);
  REQUIRE(f.runs.size() == 2);
  CHECK(f.runs[0].measured.memory_kind == MemoryKind::reserved);
  CHECK(f.runs[0].measured.peak_memory_bytes == doctest::Approx(2.0 * (1 << 30)));
  CHECK_FALSE(f.runs[0].measured.timed());
  CHECK(f.runs[1].measured.oom == true);
  REQUIRE(f.problems.size() == 6);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"row 1 (kind)", "measured.memory_kind"},     {"row 2 (no-kind)", "measured.memory_kind"},
      {"row 3 (negative)", "peak_memory_gib"},      {"row 4 (nan)", "peak_memory_gib"},
      {"row 5 (over)", "measured.peak_memory_gib"}, {"row 6 (oom-with-peak)", "measured.oom"}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(f.problems[i]);
    CHECK(f.problems[i].find(expected[i].first) != std::string::npos);
    CHECK(f.problems[i].find(expected[i].second) != std::string::npos);
  }
  CHECK(f.problems[0].find("allocated, reserved, device_used") != std::string::npos);
  CHECK(f.problems[4].find("above the 80 GiB") != std::string::npos);
  // check_published goes on past the bad rows, and names them.
  const PublishedSummary s = check_published(dir.write("runs.yaml", text));
  CHECK(s.checks.size() == 2);
  CHECK(s.problems.size() == 6);
  CHECK(s.memory_rows == 1);
  CHECK(s.oom_rows == 1);
  CHECK(s.timed_rows == 0);
}

TEST_CASE("a peak is compared in its kind: allocated < reserved < the device's used memory") {
  test::TempDir dir("published");
  auto peak = [](const std::string& kind) {
    return "{as_published: \"a peak\", peak_memory_gib: 1, memory_kind: " + kind + "}";
  };
  const PublishedSummary s = check_published(
      dir.write("runs.yaml", "runs:\n" + row("allocated", one_a100, "dp=1", peak("allocated")) +
                                 row("reserved", one_a100, "dp=1", peak("reserved")) +
                                 row("device", one_a100, "dp=1", peak("device_used"))));
  REQUIRE(s.checks.size() == 3);
  const double allocated = *s.checks[0].predicted_memory_bytes;
  const double reserved = *s.checks[1].predicted_memory_bytes;
  const double device = *s.checks[2].predicted_memory_bytes;
  const FrameworkMemory& torch = builtin_catalog().framework_memory_profile();
  CHECK(reserved == doctest::Approx(allocated * (1 + torch.allocator_slack)));
  // One GPU: no communicator buffers, so the context is the whole difference.
  CHECK(device == doctest::Approx(reserved + torch.context_for("GPU_A100_80GB")));
  CHECK(*s.checks[0].memory_error == doctest::Approx((allocated - double(1 << 30)) / (1 << 30)));
  CHECK(s.memory_rows == 3);
}

TEST_CASE("bad rows are reported by row and field, and the good ones are kept") {
  test::TempDir dir("published");
  const std::string text =
      "runs:\n" + row("good", one_a100, "dp=1") +
      row("unknown-gpu", "{gpu: GPU_NOPE, nodes: 1, gpus_per_node: 1, intra_node: pcie}", "dp=1") +
      row("too-few-gpus", one_a100, "dp=2") +
      row("no-measurement", one_a100, "dp=1", "{as_published: \"nothing\"}") +
      row("two-nodes-no-nic",
          "{gpu: GPU_A100_80GB, nodes: 2, gpus_per_node: 1, intra_node: nvlink, network: ethernet}",
          "dp=2");
  const PublishedFile f = load_published_runs(dir.write("runs.yaml", text));
  CHECK(f.rows == 5);
  REQUIRE(f.runs.size() == 1);
  CHECK(f.runs[0].id == "good");
  REQUIRE(f.problems.size() == 4);
  CHECK(f.problems[0].find("row 1 (unknown-gpu)") != std::string::npos);
  CHECK(f.problems[0].find("runs[1].hardware.gpu") != std::string::npos);
  CHECK(f.problems[1].find("row 2 (too-few-gpus)") != std::string::npos);
  CHECK(f.problems[1].find("runs[2].plan") != std::string::npos);
  CHECK(f.problems[2].find("runs[3].measured") != std::string::npos);
  CHECK(f.problems[3].find("runs[4].hardware.nic") != std::string::npos);
}

TEST_CASE("a missing field is reported by its row and name") {
  test::TempDir dir("published");
  std::string no_seq = row("no-seq", one_a100, "dp=1");
  no_seq.erase(no_seq.find("    seq: 64\n"), std::string("    seq: 64\n").size());
  std::string no_framework = row("no-framework", one_a100, "dp=1");
  no_framework.erase(no_framework.find("    framework: test\n"),
                     std::string("    framework: test\n").size());
  const PublishedFile f = load_published_runs(
      dir.write("runs.yaml", "runs:\n" + no_seq + row("good", one_a100, "dp=1") + no_framework));
  CHECK(f.rows == 3);
  REQUIRE(f.runs.size() == 1);
  CHECK(f.runs[0].row == 1);
  REQUIRE(f.problems.size() == 2);
  CHECK(f.problems[0].find("row 0 (no-seq)") != std::string::npos);
  CHECK(f.problems[0].find("runs[0].seq") != std::string::npos);
  CHECK(f.problems[1].find("row 2 (no-framework)") != std::string::npos);
  CHECK(f.problems[1].find("runs[2].framework") != std::string::npos);
}

TEST_CASE("plans compared: the fastest by sequences per second, measured and predicted") {
  auto run = [](const std::string& id, const std::string& group, int batch) {
    PublishedRun r;
    r.id = id;
    r.compare = group;
    r.global_batch = batch;
    return r;
  };
  auto check = [](double measured, double predicted, bool oom = false) {
    PublishedCheck c;
    c.measured_step_s = measured;
    c.predicted_step_s = predicted;
    c.oom = oom;
    return c;
  };
  // a: 8 seq in 1 s measured (8/s), b: 4 seq in 0.4 s (10/s): b is measured fastest.
  // Predicted a 0.5 s (16/s), b 0.3 s (13/s): a. Group g2: the faster one does not fit.
  const std::vector<PublishedRun> runs = {run("a", "g1", 8), run("lone", "g3", 8),
                                          run("b", "g1", 4), run("c", "g2", 8),
                                          run("d", "g2", 8), run("free", "", 8)};
  const std::vector<PublishedCheck> checks = {check(1, 0.5), check(1, 1),         check(0.4, 0.3),
                                              check(1, 1.2), check(2, 0.1, true), check(1, 1)};
  const std::vector<PlanComparison> c = compare_plans(runs, checks);
  REQUIRE(c.size() == 2);  // g3 has one row, "free" none
  CHECK(c[0].group == "g1");
  CHECK(c[0].ids == std::vector<std::string>{"a", "b"});
  CHECK(c[0].best_measured == "b");
  CHECK(c[0].best_predicted == "a");
  CHECK_FALSE(c[0].agree());
  CHECK(c[1].best_measured == "c");
  CHECK(c[1].best_predicted == "c");  // d is predicted out of memory
  CHECK(agreeing(c) == 1);
}

TEST_CASE("measurements convert to seconds per step: tokens/s and Megatron's TFLOP/s") {
  test::TempDir dir("published");
  const std::string text =
      "runs:\n" +
      row("tokens", one_a100, "dp=1", "{tokens_per_s: 512, as_published: \"512 tok/s\"}") +
      row("tflops", one_a100, "dp=1",
          "{tflops_per_gpu: 2, flops_formula: megatron, as_published: \"2 TFLOP/s\"}");
  const PublishedFile f = load_published_runs(dir.write("runs.yaml", text));
  REQUIRE(f.runs.size() == 2);
  CHECK(f.runs[0].measured.step_time_s == doctest::Approx(8.0 * 64 / 512));
  const ModelSpec nano = load_model("gpt2-nano");
  CHECK(f.runs[1].measured.step_time_s ==
        doctest::Approx(megatron_step_flops(nano, 8, 64, false) / 2e12));
}

TEST_CASE("the slice follows the stated hardware, and InfiniBand is not window-limited") {
  test::TempDir dir("published");
  const std::string text =
      "runs:\n" +
      row("ib",
          "{gpu: GPU_A100_80GB, nodes: 2, gpus_per_node: 4, intra_node: nvlink, "
          "network: infiniband, nic: NIC_IB_HDR_8x200}",
          "dp=8") +
      row("eth",
          "{gpu: GPU_V100_PCIE, nodes: 2, gpus_per_node: 2, intra_node: pcie, "
          "network: ethernet, nic: NIC_ConnectX_5}",
          "dp=4");
  const PublishedFile f = load_published_runs(dir.write("runs.yaml", text));
  REQUIRE(f.runs.size() == 2);
  const Slice ib = published_slice(f.runs[0]);
  CHECK(ib.gpu_count() == 8);
  REQUIRE(ib.vms.size() == 2);
  CHECK(ib.vms[0].interconnect == "nvlink");
  REQUIRE(ib.networks.size() == 1);
  CHECK(ib.networks[0].tcp_window_bytes == 0);
  const Slice eth = published_slice(f.runs[1]);
  CHECK(eth.gpu_count() == 4);
  CHECK(eth.vms[1].nic == "NIC_ConnectX_5");
  CHECK(eth.networks[0].tcp_window_bytes < 0);  // the link class's TCP window
  CHECK(eth.communicator.name == "nccl-socket");
}

TEST_CASE("Ethernet shaped by the run (tc netem): the NIC's rate capped, the delay added one way") {
  test::TempDir dir("published");
  const std::string eth =
      "{gpu: GPU_V100_16GB, nodes: 2, gpus_per_node: 1, intra_node: pcie, network: ethernet, "
      "nic: NIC_AWS_P3_2XLARGE";
  const std::string text =
      "runs:\n" + row("plain", eth + "}", "dp=2") +
      row("shaped", eth + ", added_delay_ms: 10, shaped_gbit_s: 1}", "dp=2") +
      row("shaped-ib",
          "{gpu: GPU_A100_80GB, nodes: 2, gpus_per_node: 1, intra_node: nvlink, "
          "network: infiniband, nic: NIC_IB_HDR_8x200, shaped_gbit_s: 1}",
          "dp=2") +
      row("negative-delay", eth + ", added_delay_ms: -1}", "dp=2");
  const PublishedFile f = load_published_runs(dir.write("runs.yaml", text));
  REQUIRE(f.runs.size() == 2);
  REQUIRE(f.problems.size() == 2);
  CHECK(f.problems[0].find("runs[2].hardware.shaped_gbit_s") != std::string::npos);
  CHECK(f.problems[0].find("only an Ethernet network") != std::string::npos);
  CHECK(f.problems[1].find("runs[3].hardware.added_delay_ms") != std::string::npos);
  const PublishedRun& plain = f.runs[0];
  const PublishedRun& shaped = f.runs[1];
  CHECK(shaped.hardware.added_delay_ms == 10);
  CHECK(shaped.hardware.shaped_gbit_s == 1);
  const Catalog& base = builtin_catalog();
  const Catalog unshaped = shaped_catalog(plain, base);
  CHECK(unshaped.nics.at("NIC_AWS_P3_2XLARGE").bandwidth ==
        base.nics.at("NIC_AWS_P3_2XLARGE").bandwidth);
  CHECK(unshaped.link_classes.at("l2bridge").latency_s ==
        base.link_classes.at("l2bridge").latency_s);
  const Catalog c = shaped_catalog(shaped, base);
  CHECK(c.nics.at("NIC_AWS_P3_2XLARGE").bandwidth == doctest::Approx(1e9 / 8));
  CHECK(c.link_classes.at("l2bridge").latency_s ==
        doctest::Approx(base.link_classes.at("l2bridge").latency_s + 10e-3));
  // A data-parallel step over the shaped link takes longer than over the plain one (one
  // check_published: SimGrid wants every slice built before the first simulation).
  const PublishedSummary s = check_published(dir.write(
      "good.yaml", "runs:\n" + row("plain", eth + "}", "dp=2") +
                       row("shaped", eth + ", added_delay_ms: 10, shaped_gbit_s: 1}", "dp=2")));
  REQUIRE(s.checks.size() == 2);
  CHECK(s.checks[1].predicted_step_s > s.checks[0].predicted_step_s);
}

TEST_CASE("a run simulates, and its error is signed against the measurement") {
  test::TempDir dir("published");
  const PublishedFile f =
      load_published_runs(dir.write("runs.yaml", "runs:\n" + row("nano", one_a100, "dp=1")));
  REQUIRE(f.runs.size() == 1);
  const PublishedCheck c = check_published_run(f.runs[0]);
  CHECK(c.predicted_step_s > 0);
  CHECK(c.error == doctest::Approx((c.predicted_step_s - 0.1) / 0.1));
  CHECK(median_abs({-0.3, 0.1, 0.2}) == doctest::Approx(0.2));
  CHECK(median_abs({-0.4, 0.1}) == doctest::Approx(0.25));
}

TEST_CASE(
    "the shipped file: step times within a 12% median, and no prediction misses by more than 50% "
    "without a stated reason") {
  const PublishedSummary s = check_published(builtin_published_runs_path());
  CHECK(s.median_abs_error <= 0.12);
  CHECK(s.problems.empty());
  REQUIRE(s.checks.size() == s.runs.size());
  for (std::size_t i = 0; i < s.checks.size(); ++i) {
    CAPTURE(s.runs[i].id);
    CAPTURE(s.checks[i].error);
    if (std::abs(s.checks[i].error) > 0.5) CHECK(!s.runs[i].large_error_reason.empty());
    if (s.checks[i].timed) CHECK(!s.checks[i].oom);  // every timed run did fit its GPUs
  }
}

TEST_CASE(
    "the shipped file: peaks within a 10% median, every run out of memory predicted so and every "
    "run that ran predicted to fit") {
  const PublishedSummary s = check_published(builtin_published_runs_path());
  REQUIRE(s.median_abs_memory_error.has_value());
  CHECK(s.memory_rows >= 33);
  CHECK(*s.median_abs_memory_error <= 0.10);
  int out_of_memory = 0;
  for (std::size_t i = 0; i < s.checks.size(); ++i) {
    const PublishedCheck& c = s.checks[i];
    if (!c.measured_oom) continue;
    CAPTURE(s.runs[i].id);
    CHECK(c.oom == *c.measured_oom);
    out_of_memory += *c.measured_oom;
  }
  CHECK(out_of_memory >= 7);
  CHECK(s.oom_agreeing == s.oom_rows);
}

TEST_CASE(
    "the shipped file: where a source compares plans, the fastest predicted is the fastest "
    "measured") {
  const PublishedSummary s = check_published(builtin_published_runs_path());
  const std::vector<PlanComparison> comparisons = compare_plans(s.runs, s.checks);
  CHECK(comparisons.size() >= 2);
  for (const PlanComparison& c : comparisons) {
    CAPTURE(c.group);
    CAPTURE(c.best_predicted);
    CHECK(c.best_measured == c.best_predicted);
  }
}
