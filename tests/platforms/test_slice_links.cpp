// Routed and point-to-point networks (fabnetv4/v6, l2ptp) and measured links per site pair:
// which round trip and bandwidth a pair gets (network's own, measured link, catalog), and the
// loader's rejections of links and networks that do not fit the slice.
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "platforms/slice.hpp"
#include "temp_yaml.hpp"

using namespace fabtrain;

namespace {

// Four sites on one FABNetv4 network; UTAH-STAR measured, the other pairs from the catalog.
const std::string kRouted = R"(vms:
  - {name: utah, site: UTAH, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic}
  - {name: star, site: STAR, gpu: GPU_A30, gpus: 1, nic: NIC_Basic}
  - {name: tacc, site: TACC, gpu: GPU_A40, gpus: 1, nic: NIC_ConnectX_6}
  - {name: amst, site: AMST, gpu: GPU_RTX6000, gpus: 1, nic: NIC_Basic}
networks:
  - {name: v4, kind: fabnetv4, vms: [utah, star, tacc, amst]}
links:
  - {sites: [STAR, UTAH], rtt_ms: 38.5, rtt_p90_ms: 41, bandwidth_gbit_s: 9.4, bandwidth_one_stream_gbit_s: 2.1, streams: 8, source: "probe 2026-12-01: MPI ping-pong and TCP streams"}
)";

std::string error_of(const test::TempYaml& dir, const std::string& text) {
  const std::string path = dir.write("s.yaml", text);
  return test::error_of([&] { load_slice(path); });
}

}  // namespace

TEST_CASE("links: a measured pair takes the link's numbers, the others the catalog's") {
  test::TempYaml dir;
  const Slice s = load_slice(dir.write("routed.yaml", kRouted));
  const Network& net = s.networks[0];
  CHECK(net.sites.size() == 4);
  REQUIRE(s.links.size() == 1);
  CHECK(s.links[0].rtt_p90_s == doctest::Approx(0.041));
  CHECK(s.links[0].bandwidth_one_stream == doctest::Approx(2.1e9 / 8));
  CHECK(s.links[0].streams == 8);

  const PairValue measured = s.site_rtt(net, "UTAH", "STAR");
  CHECK(measured.value == doctest::Approx(0.0385));
  CHECK(measured.origin == "measured");
  CHECK(measured.source.find("probe 2026-12-01") != std::string::npos);
  CHECK(s.site_bandwidth(net, "STAR", "UTAH").value == doctest::Approx(9.4e9 / 8));
  CHECK(s.site_bandwidth(net, "STAR", "UTAH").origin == "measured");

  const PairValue estimated = s.site_rtt(net, "TACC", "STAR");
  CHECK(estimated.origin == "estimated");
  CHECK(estimated.value == doctest::Approx(builtin_catalog().latency("TACC", "STAR").rtt_s));
  CHECK(s.site_bandwidth(net, "TACC", "STAR").origin == "nic");
  CHECK(s.site_rtt(net, "UTAH", "AMST").origin == "measured");  // the catalog's own measurement
  // One-way VM latency: the routed class's hop plus half the pair's round trip.
  CHECK(s.one_way_latency_s("utah", "star") ==
        doctest::Approx(builtin_catalog().link_class("fabnetv4").latency_s + 0.0385 / 2));
}

TEST_CASE("links: a network's own round trip and a what-if override win over a measured link") {
  test::TempYaml dir;
  const Slice given =
      load_slice(dir.write("given.yaml", test::replaced_first(kRouted, "kind: fabnetv4,",
                                                              "kind: fabnetv4, rtt_ms: 70,")));
  CHECK(given.site_rtt(given.networks[0], "UTAH", "STAR").value == doctest::Approx(0.070));
  CHECK(given.site_rtt(given.networks[0], "UTAH", "STAR").origin == "given");
  Slice what_if = load_slice(dir.write("what-if.yaml", kRouted));
  override_wan_latency(what_if, 0.2);
  CHECK(what_if.site_rtt(what_if.networks[0], "UTAH", "STAR").value == doctest::Approx(0.2));
}

TEST_CASE("networks: l2ptp joins two VMs at two sites; fabnetv6 any number of sites") {
  test::TempYaml dir;
  const std::string two = R"(vms:
  - {name: a, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: NIC_ConnectX_6}
  - {name: b, site: AMST, gpu: GPU_RTX6000, gpus: 1, nic: NIC_ConnectX_6}
  - {name: c, site: AMST, gpu: GPU_RTX6000, gpus: 1, nic: NIC_ConnectX_6}
networks:
  - {name: ptp, kind: l2ptp, vms: [a, b]}
  - {name: v6, kind: fabnetv6, vms: [a, b, c]}
)";
  const Slice s = load_slice(dir.write("ptp.yaml", two));
  CHECK(s.network_between("a", "b").kind == "l2ptp");
  CHECK(s.network_between("a", "b").sites == std::vector<std::string>{"UTAH", "AMST"});
  CHECK(s.network_between("b", "c").kind == "fabnetv6");
  CHECK(error_of(dir, test::replaced_first(two, "kind: l2ptp, vms: [a, b]",
                                           "kind: l2ptp, vms: [a, b, c]"))
            .find("exactly two interfaces") != std::string::npos);
  CHECK(error_of(dir,
                 test::replaced_first(two, "kind: l2ptp, vms: [a, b]", "kind: l2ptp, vms: [b, c]"))
            .find("joins exactly two sites") != std::string::npos);
  CHECK(error_of(dir, test::replaced_first(two, "kind: fabnetv6,",
                                           "kind: fabnetv6, sites: [UTAH, AMST],"))
            .find("only an l2sts or l2ptp network names its sites") != std::string::npos);
  CHECK(error_of(dir, test::replaced_first(two, "kind: fabnetv6", "kind: fabnetv5"))
            .find("fabnetv4, fabnetv6") != std::string::npos);
}

TEST_CASE("links: rejected when they do not fit the slice, naming the file, element and rule") {
  test::TempYaml dir;
  struct Case {
    std::string from, to, expected;
  };
  const std::string link = "{sites: [STAR, UTAH], rtt_ms: 38.5,";
  const std::vector<Case> cases = {
      {"[STAR, UTAH]", "[STAR, MASS]", "links[0].sites: site MASS has no VM in this slice"},
      {"[STAR, UTAH]", "[STAR, STAR]", "links[0].sites: a link joins two different sites"},
      {"[STAR, UTAH]", "[STAR]", "links[0].sites: a link joins two different sites"},
      {"rtt_ms: 38.5", "rtt_ms: -1", "links[0].rtt_ms: -1 must be zero or positive"},
      {"rtt_p90_ms: 41", "rtt_p90_ms: 30", "links[0].rtt_p90_ms: the 90th percentile"},
      {", source: \"probe", ", sorce: \"probe", "links[0].sorce: unknown key"},
      {", source: \"probe 2026-12-01: MPI ping-pong and TCP streams\"", "",
       "links[0].source: missing"},
      {"links:\n", "links:\n  - " + link + " source: x}\n",
       "links[1].sites: the pair STAR-UTAH is listed twice"},
      {"vms: [utah, star, tacc, amst]", "vms: [utah, star, tacc, amst, nowhere]",
       "networks[0].vms: no VM named 'nowhere'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.expected);
    const std::string message = error_of(dir, test::replaced_first(kRouted, c.from, c.to));
    CHECK(message.find(c.expected) != std::string::npos);
    CHECK(message.find("s.yaml") != std::string::npos);
  }
}

TEST_CASE(
    "one pair's round trip overridden: the other pairs keep theirs, on routed and two-site "
    "networks") {
  test::TempYaml dir;
  Slice s = load_slice(dir.write("routed.yaml", kRouted));
  const double tacc_star = pair_rtt_s(s, "TACC", "STAR"), utah_star = pair_rtt_s(s, "UTAH", "STAR");
  override_pair_latency(s, "AMST", "UTAH", 0.007);
  CHECK(pair_rtt_s(s, "UTAH", "AMST") == doctest::Approx(0.007));
  CHECK(pair_rtt_s(s, "TACC", "STAR") == doctest::Approx(tacc_star));
  CHECK(pair_rtt_s(s, "UTAH", "STAR") == doctest::Approx(utah_star));
  // A routed network that gave one round trip to all its pairs keeps it for the others.
  Slice given = load_slice(dir.write("given.yaml", R"(vms:
  - {name: utah, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: NIC_Basic}
  - {name: star, site: STAR, gpu: GPU_A30, gpus: 1, nic: NIC_Basic}
  - {name: tacc, site: TACC, gpu: GPU_A40, gpus: 1, nic: NIC_Basic}
networks:
  - {name: v4, kind: fabnetv4, vms: [utah, star, tacc], rtt_ms: 40}
)"));
  override_pair_latency(given, "UTAH", "TACC", 0.002);
  CHECK(pair_rtt_s(given, "UTAH", "TACC") == doctest::Approx(0.002));
  CHECK(pair_rtt_s(given, "UTAH", "STAR") == doctest::Approx(0.040));
  CHECK(pair_rtt_s(given, "STAR", "TACC") == doctest::Approx(0.040));
  // Two sites on an L2STS network: the network's own round trip changes.
  Slice two = load_slice("utah-amst");
  CHECK(pair_rtt_s(two, "UTAH", "AMST") == doctest::Approx(0.103));
  override_pair_latency(two, "UTAH", "AMST", 0.010);
  CHECK(pair_rtt_s(two, "AMST", "UTAH") == doctest::Approx(0.010));
  CHECK(test::error_of([&] {
          override_pair_latency(two, "UTAH", "AMST", -1);
        }).find("between 0 and") != std::string::npos);
}
