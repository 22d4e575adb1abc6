// The built-in catalog's contents, the latency estimate, and the catalog loader's rejections.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "common/error.hpp"
#include "platforms/catalog.hpp"
#include "temp_yaml.hpp"

using namespace fabtrain;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string error_of(const std::string& path) {
  return test::error_of([&] { load_catalog(path); });
}

// A small valid catalog; tests break one thing at a time.
const std::string kMinimalCatalog = R"(gpus:
  GPU_X:
    description: test GPU
    memory_gib: 16
    peak_fp32_tflops: 10
    peak_tf32_tflops: 0
    peak_fp16_tflops: 40
    peak_bf16_tflops: 0
    memory_bandwidth_gb_s: 300
    pcie_generation: 3
    pcie_bandwidth_gb_s: 15.75
    nvlink_bandwidth_gb_s: 0
    source: test
nics:
  NIC_Basic: {bandwidth_gbit_s: 100, source: test}
sites:
  UTAH: {location: Salt Lake City, latitude: 40.76, longitude: -111.85}
  AMST: {location: Amsterdam, latitude: 52.37, longitude: 4.90}
latencies:
  - {a: UTAH, b: AMST, rtt_ms: 103, measured: true, source: test}
latency_estimate: {fibre_fraction_of_c: 0.667, route_factor: 1.25, switching_allowance_ms: 2, source: estimated}
link_classes:
  pcie: {latency_us: 1, tcp_window_mib: 0, efficiency: 0.8, source: test}
  nvlink: {latency_us: 1, tcp_window_mib: 0, efficiency: 0.8, source: test}
  l2bridge: {latency_us: 50, tcp_window_mib: 4, efficiency: 0.9, source: test}
  l2sts: {latency_us: 50, tcp_window_mib: 4, efficiency: 0.9, source: test}
  switched: {latency_us: 5, tcp_window_mib: 4, efficiency: 0.9, source: test}
default_communicator: nccl-socket
communicators:
  nccl-socket: {library: test, streams_per_peer: 2, max_in_flight_mib: 4, eager_limit_kib: 0, rendezvous_round_trips: 0, knobs: {channels: "2"}, source: test}
compute: {matmul_efficiency: 0.5, memory_efficiency: 0.7, kernel_overhead_us: 10, source: test}
framework_memory:
  default: torch
  profiles:
    torch: {context_mib: 300, context_mib_by_gpu: {GPU_X: 500}, cublas_workspace_mib: 8, allocator_slack: 0.05, source: test}
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("the built-in catalog has the FABRIC GPUs and NICs, each with a source") {
  const Catalog& cat = builtin_catalog();
  for (const char* name :
       {"GPU_RTX6000", "GPU_TeslaT4", "GPU_A30", "GPU_A40", "GPU_V100", "GPU_A100_40GB",
        "GPU_A100_80GB", "GPU_H100", "GPU_H200", "GPU_L40S", "CPU_HOST"}) {
    CAPTURE(name);
    const GpuType& g = cat.gpu(name);
    CHECK(g.memory_bytes > 0);
    CHECK(g.peak_fp32_flops > 0);
    CHECK(g.memory_bandwidth > 0);
    CHECK_FALSE(g.source.empty());
  }
  CHECK(cat.gpu("GPU_RTX6000").memory_bytes == 24 * kGiB);
  CHECK(cat.gpu("GPU_TeslaT4").memory_bytes == 16 * kGiB);
  CHECK(cat.gpu("GPU_A40").memory_bytes == 48 * kGiB);
  // Turing has neither TF32 nor bf16; Ampere has both.
  CHECK(cat.gpu("GPU_RTX6000").peak_bf16_flops == 0);
  CHECK(cat.gpu("GPU_A30").peak_bf16_flops > cat.gpu("GPU_A30").peak_fp32_flops);
  CHECK(cat.gpu("GPU_A100_80GB").nvlink_bandwidth > 0);
  CHECK(cat.gpu("GPU_TeslaT4").nvlink_bandwidth == 0);
  CHECK(cat.gpu("CPU_HOST").is_cpu);
  CHECK_FALSE(cat.gpu("GPU_A30").is_cpu);
  CHECK(cat.gpu("CPU_HOST").source.find("assumption") != std::string::npos);
  for (const char* nic : {"NIC_Basic", "NIC_ConnectX_5", "NIC_ConnectX_6"}) {
    CAPTURE(nic);
    CHECK(cat.nic(nic).bandwidth > 0);
    CHECK_FALSE(cat.nic(nic).source.empty());
  }
  CHECK(cat.nic("NIC_ConnectX_6").bandwidth == doctest::Approx(100e9 / 8));
  // The framework's memory: a default profile, a context measured on the V100 16GB where the
  // default is not, NCCL's device buffers and none for Open MPI's TCP path.
  const FrameworkMemory& framework = cat.framework_memory_profile();
  CHECK(framework.context_bytes > 0);
  CHECK(framework.allocator_slack > 0);
  CHECK_FALSE(framework.source.empty());
  const FrameworkMemory& eager = cat.framework_memory_profile("pytorch-eager");
  CHECK(eager.context_for("GPU_V100_16GB") > eager.context_for("GPU_A100_40GB"));
  CHECK(cat.communicator("nccl-socket").device_buffer_bytes == doctest::Approx(4 * 1024 * 1024));
  CHECK(cat.communicator("nccl-socket").device_buffer_channels == 2);
  CHECK(cat.communicator("openmpi-tcp").device_buffer_channels == 0);
}

TEST_CASE("a catalog's framework memory profile is read with its units, and bad ones are named") {
  test::TempYaml tmp;
  const Catalog cat = load_catalog(tmp.write("c.yaml", kMinimalCatalog));
  const FrameworkMemory& torch = cat.framework_memory_profile();
  CHECK(torch.context_bytes == doctest::Approx(300 * 1024.0 * 1024));
  CHECK(torch.context_for("GPU_X") == doctest::Approx(500 * 1024.0 * 1024));
  CHECK(torch.context_for("GPU_Y") == doctest::Approx(300 * 1024.0 * 1024));
  CHECK(torch.cublas_workspace_bytes == doctest::Approx(8 * 1024.0 * 1024));
  CHECK(torch.allocator_slack == doctest::Approx(0.05));
  CHECK_THROWS_WITH(cat.framework_memory_profile("jax"), doctest::Contains("jax"));
  auto refused = [&](const std::string& from, const std::string& to, const std::string& says) {
    CAPTURE(to);
    CHECK_THROWS_WITH(load_catalog(tmp.write("bad.yaml", replaced(kMinimalCatalog, from, to))),
                      doctest::Contains(says.c_str()));
  };
  refused("GPU_X: 500", "GPU_NONE: 500", "unknown GPU type 'GPU_NONE'");
  refused("allocator_slack: 0.05", "allocator_slack: 1.5", "allocator_slack");
  refused("default: torch", "default: jax", "'jax' is not in profiles");
  refused("allocator_slack: 0.05, source: test", "allocator_slack: 0.05", "source");
  refused("cublas_workspace_mib: 8", "cublas_workspace_mib: -8", "cublas_workspace_mib");
}

TEST_CASE("the built-in catalog has the FABRIC sites and all five link classes") {
  const Catalog& cat = builtin_catalog();
  for (const char* s : {"TACC", "UTAH", "MASS", "GPN",  "AMST",  "STAR", "NCSA", "WASH", "MICH",
                        "SALT", "DALL", "CLEM", "UCSD", "FIU",   "MAX",  "KANS", "LOSA", "SEAT",
                        "ATLA", "NEWY", "CERN", "PSC",  "BRIST", "TOKY", "HAWI"}) {
    CAPTURE(s);
    CHECK_FALSE(cat.site(s).location.empty());
  }
  CHECK(cat.site("AMST").longitude > 0);  // east of Greenwich
  CHECK(cat.site("UTAH").longitude < -100);
  CHECK(cat.link_class("pcie").tcp_window_bytes == 0);
  CHECK(cat.link_class("nvlink").tcp_window_bytes == 0);
  for (const char* c : {"l2bridge", "l2sts", "switched"}) {
    CAPTURE(c);
    CHECK(cat.link_class(c).tcp_window_bytes == 4.0 * 1024 * 1024);
  }
}

TEST_CASE("the communicator profiles follow NCCL's and Open MPI's documented defaults") {
  const Catalog& cat = builtin_catalog();
  const CommunicatorProfile& nccl = cat.communicator("nccl-socket");
  CHECK(cat.default_communicator == "nccl-socket");
  CHECK(nccl.streams_per_peer ==
        2);  // 2 channels x NCCL_SOCKET_NTHREADS 1 x NCCL_NSOCKS_PERTHREAD 1
  CHECK(nccl.max_in_flight_bytes == 4.0 * 1024 * 1024);  // NCCL_BUFFSIZE
  CHECK(nccl.knobs.at("NCCL_SOCKET_NTHREADS") == "1");
  const CommunicatorProfile& ompi = cat.communicator("openmpi-tcp");
  CHECK(ompi.streams_per_peer == 1);  // btl_tcp_links
  CHECK(ompi.eager_limit_bytes == 64 * 1024);
  CHECK(ompi.rendezvous_round_trips == 1);
  CHECK(ompi.started_reduce_scatter_via_root);  // libnbc: no ring for it
  CHECK_FALSE(nccl.started_reduce_scatter_via_root);
  for (const auto& entry :
       cat.communicators) {  // no structured binding: clang 14 cannot capture it
    CAPTURE(entry.first);
    CHECK(!entry.second.source.empty());
  }
  CHECK_THROWS_WITH_AS(cat.communicator("gloo"), doctest::Contains("gloo"), Error);
}

TEST_CASE("NCCL's profiles list its protocols from its tuner and Open MPI's none") {
  const Catalog& cat = builtin_catalog();
  const auto& socket = cat.communicator("nccl-socket").protocols;
  REQUIRE(socket.size() == 2);  // LL128 only where every hop is NVLink
  CHECK(socket[0].name == "LL");
  CHECK(socket[0].bandwidth_fraction == 0.5);  // 4 bytes of flag with every 4 bytes of data
  CHECK(socket[0].call_latency_s == doctest::Approx(6.6e-6));
  CHECK(socket[0].step_latency_net_s < socket[1].step_latency_net_s);
  CHECK(socket[1].name == "Simple");
  CHECK(socket[1].bandwidth_fraction == 1);
  const auto& ib = cat.communicator("nccl-ib").protocols;
  REQUIRE(ib.size() == 3);
  CHECK(ib[1].name == "LL128");
  CHECK(ib[1].bandwidth_fraction == doctest::Approx(120.0 / 128));
  CHECK(cat.communicator("openmpi-tcp").protocols.empty());
}

TEST_CASE("every GPU of the built-in catalog has its SM count and products are tiled") {
  const Catalog& cat = builtin_catalog();
  CHECK(cat.gpu("GPU_A100_40GB").sm_count == 108);
  CHECK(cat.gpu("GPU_V100").sm_count == 80);
  for (const auto& entry : cat.gpus) {
    CAPTURE(entry.first);
    if (!entry.second.is_cpu) CHECK(entry.second.sm_count > 0);
  }
  CHECK(cat.compute.matmul_tile == 128);
}

TEST_CASE("unknown names are errors that list the known ones") {
  const Catalog& cat = builtin_catalog();
  CHECK_THROWS_WITH_AS(cat.gpu("GPU_NOPE"), doctest::Contains("GPU_RTX6000"), Error);
  CHECK_THROWS_WITH_AS(cat.nic("NIC_NOPE"), doctest::Contains("NIC_ConnectX_5"), Error);
  CHECK_THROWS_WITH_AS(cat.site("NOWHERE"), doctest::Contains("UTAH"), Error);
  CHECK_THROWS_WITH_AS(cat.latency("UTAH", "NOWHERE"), doctest::Contains("NOWHERE"), Error);
  CHECK_THROWS_WITH_AS(cat.link_class("carrier-pigeon"), doctest::Contains("l2sts"), Error);
}

TEST_CASE("UTAH-AMST is the study's measured 103 ms, in both directions") {
  const Catalog& cat = builtin_catalog();
  for (const auto& l : {cat.latency("UTAH", "AMST"), cat.latency("AMST", "UTAH")}) {
    CHECK(l.rtt_s == doctest::Approx(0.103));
    CHECK(l.measured);
  }
  CHECK(cat.latency("UTAH", "UTAH").rtt_s == 0);
}

TEST_CASE("unmeasured pairs are estimated from distance and say so") {
  const Catalog& cat = builtin_catalog();
  const SiteLatency tacc = cat.latency("UTAH", "TACC");
  CHECK_FALSE(tacc.measured);
  CHECK(tacc.source.find("estimated") != std::string::npos);
  CHECK(tacc.rtt_s > 0.015);
  CHECK(tacc.rtt_s < 0.060);
  // Same city: little more than the switching allowance. Farther is slower.
  CHECK(cat.latency("UTAH", "SALT").rtt_s < 0.004);
  CHECK(cat.latency("UTAH", "GPN").rtt_s < cat.latency("UTAH", "MASS").rtt_s);
  CHECK(cat.latency("UTAH", "MASS").rtt_s < cat.latency("UTAH", "CERN").rtt_s);
  CHECK(cat.latency("MASS", "TACC").rtt_s == doctest::Approx(cat.latency("TACC", "MASS").rtt_s));
}

TEST_CASE("the estimate, applied to the measured pair, lands near the measurement") {
  Catalog cat = builtin_catalog();
  cat.latencies.clear();
  const SiteLatency est = cat.latency("UTAH", "AMST");
  CHECK_FALSE(est.measured);
  CHECK(est.rtt_s == doctest::Approx(0.103).epsilon(0.10));
}

TEST_CASE("great-circle distance: zero to itself, a quarter meridian from equator to pole") {
  const Site equator{"E", "", 0, 0}, pole{"P", "", 90, 0}, antipode{"A", "", 0, 180};
  CHECK(great_circle_distance_m(equator, equator) == 0);
  CHECK(great_circle_distance_m(equator, pole) == doctest::Approx(M_PI / 2 * 6371e3));
  CHECK(great_circle_distance_m(equator, antipode) == doctest::Approx(M_PI * 6371e3));
}

TEST_CASE("a minimal catalog file loads and converts units") {
  test::TempYaml tmp;
  const Catalog cat = load_catalog(tmp.write("catalog.yaml", kMinimalCatalog));
  CHECK(cat.gpu("GPU_X").memory_bytes == 16 * kGiB);
  CHECK(cat.gpu("GPU_X").peak_fp16_flops == doctest::Approx(40e12));
  CHECK(cat.gpu("GPU_X").memory_bandwidth == doctest::Approx(300e9));
  CHECK(cat.link_class("l2sts").latency_s == doctest::Approx(50e-6));
  CHECK(cat.compute.kernel_overhead_s == doctest::Approx(10e-6));
  CHECK(cat.latency_estimate.switching_allowance_s == doctest::Approx(2e-3));
}

TEST_CASE("bad catalog files are rejected with the file, the field and the rule") {
  test::TempYaml tmp;
  struct Case {
    std::string what;
    std::string text;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"unknown key",
       replaced(kMinimalCatalog, "    memory_gib: 16", "    memory_gb: 16"),
       {"gpus.GPU_X.memory_gb", "unknown key"}},
      {"wrong type",
       replaced(kMinimalCatalog, "memory_gib: 16", "memory_gib: lots"),
       {"gpus.GPU_X.memory_gib", "is not a number", "lots"}},
      {"negative latency",
       replaced(kMinimalCatalog, "rtt_ms: 103", "rtt_ms: -5"),
       {"latencies[0].rtt_ms", "zero or positive"}},
      {"protocol bandwidth above 1",
       replaced(
           kMinimalCatalog, "knobs: {channels: \"2\"}, source",
           "knobs: {channels: \"2\"}, protocols: [{name: LL, call_latency_us: 6, "
           "step_latency_intra_us: 1, step_latency_net_us: 2, bandwidth_fraction: 2}], source"),
       {"communicators.nccl-socket.protocols[0].bandwidth_fraction", "above 1"}},
      {"protocol listed twice",
       replaced(kMinimalCatalog, "knobs: {channels: \"2\"}, source",
                "knobs: {channels: \"2\"}, protocols: [{name: LL, call_latency_us: 6, "
                "step_latency_intra_us: 1, step_latency_net_us: 2, bandwidth_fraction: 0.5}, "
                "{name: LL, call_latency_us: 6, step_latency_intra_us: 1, step_latency_net_us: 2, "
                "bandwidth_fraction: 0.5}], source"),
       {"communicators.nccl-socket.protocols[1]", "listed twice"}},
      {"negative SM count",
       replaced(kMinimalCatalog, "    memory_gib: 16", "    memory_gib: 16\n    sm_count: -3"),
       {"gpus.GPU_X.sm_count", "zero or positive"}},
      {"missing latency",
       replaced(kMinimalCatalog, "rtt_ms: 103, ", ""),
       {"latencies[0].rtt_ms", "missing"}},
      {"latency naming an unknown site",
       replaced(kMinimalCatalog, "b: AMST", "b: MARS"),
       {"latencies[0].b", "MARS"}},
      {"missing source",
       replaced(kMinimalCatalog, "NIC_Basic: {bandwidth_gbit_s: 100, source: test}",
                "NIC_Basic: {bandwidth_gbit_s: 100}"),
       {"nics.NIC_Basic.source", "missing"}},
      {"default communicator not defined",
       replaced(kMinimalCatalog, "default_communicator: nccl-socket", "default_communicator: gloo"),
       {"default_communicator", "gloo"}},
      {"communicator with no streams",
       replaced(kMinimalCatalog, "streams_per_peer: 2", "streams_per_peer: 0"),
       {"communicators.nccl-socket.streams_per_peer", "at least 1"}},
      {"communicator with an unknown started reduce-scatter",
       replaced(kMinimalCatalog, "streams_per_peer: 2,",
                "streams_per_peer: 2, started_reduce_scatter: tree,"),
       {"communicators.nccl-socket.started_reduce_scatter", "'tree' is not ring or"}},
      {"missing link class",
       replaced(kMinimalCatalog,
                "  switched: {latency_us: 5, tcp_window_mib: 4, efficiency: 0.9, source: test}\n",
                ""),
       {"link_classes", "switched"}},
      {"efficiency above one",
       replaced(kMinimalCatalog, "efficiency: 0.8, source: test}\n  nvlink",
                "efficiency: 1.5, source: test}\n  nvlink"),
       {"link_classes.pcie.efficiency", "above 1"}},
      {"gpus not a mapping", "gpus: [1, 2]\n", {"gpus", "expected a mapping", "a list"}},
      {"a GPU given twice",
       replaced(kMinimalCatalog, "nics:", "  GPU_X: {}\nnics:"),
       {"gpus.GPU_X", "duplicate"}},
      {"not YAML", "gpus: [unclosed", {"not valid YAML"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::string path = tmp.write("bad.yaml", c.text);
    const std::string message = error_of(path);
    CHECK(message.find(path) != std::string::npos);
    for (const auto& part : c.expected) {
      CAPTURE(message);
      CHECK(message.find(part) != std::string::npos);
    }
  }
  CHECK_THROWS_WITH_AS(load_catalog(tmp.write("none.yaml", "") + ".missing"),
                       doctest::Contains("not found"), Error);
}
