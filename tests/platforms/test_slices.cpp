// The built-in slices, what a Slice answers (GPUs, sites, networks, latencies), the what-if
// override, and the slice loader's rejections of bad files.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "platforms/slice.hpp"
#include "temp_yaml.hpp"

using namespace fabtrain;

namespace {

int count_of(const Slice& s, const std::string& gpu_type) {
  int n = 0;
  for (const auto& g : s.gpus()) n += g.type->name == gpu_type;
  return n;
}

// A valid two-site slice; the rejection tests break one thing at a time.
const std::string kTwoSites = R"(description: test slice
vms:
  - {name: a, site: UTAH, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic}
  - {name: b, site: AMST, gpu: GPU_TeslaT4, gpus: 1, nic: NIC_ConnectX_6}
networks:
  - {name: wan, kind: l2sts, sites: [UTAH, AMST], vms: [a, b]}
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

std::string error_of(const std::string& path) {
  return test::error_of([&] { load_slice(path); });
}

}  // namespace

TEST_CASE("every built-in slice loads, and the study's clusters are there") {
  const auto names = builtin_slice_names();
  for (const char* expected : {"tacc", "utah-gpn", "utah-mass", "utah-amst", "dgx-a100-8"}) {
    CAPTURE(expected);
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  }
  for (const auto& name : names) {
    CAPTURE(name);
    const Slice s = load_slice(name);
    CHECK(s.name == name);
    CHECK(s.gpu_count() >= 1);
    CHECK_FALSE(s.description.empty());
  }
}

TEST_CASE("GPU counts, types and sites of the built-in slices") {
  const Slice tacc = load_slice("tacc");
  CHECK(tacc.site_names() == std::vector<std::string>{"TACC"});
  CHECK(tacc.gpu_count() == 4);
  CHECK(count_of(tacc, "GPU_RTX6000") == 4);

  const Slice amst = load_slice("utah-amst");
  CHECK(amst.site_names() == std::vector<std::string>{"UTAH", "AMST"});
  CHECK(amst.vms.size() == 2);
  CHECK(amst.gpu_count() == 4);
  for (const auto& vm : amst.vms) CHECK(vm.gpus == 2);  // the study's figure 2
  CHECK(amst.networks.size() == 1);
  CHECK(amst.networks[0].kind == "l2sts");

  const Slice gpn = load_slice("utah-gpn");  // heterogeneous
  CHECK(gpn.site_names() == std::vector<std::string>{"UTAH", "GPN"});
  CHECK(count_of(gpn, "GPU_RTX6000") == 2);
  CHECK(count_of(gpn, "GPU_TeslaT4") == 2);

  const Slice mass = load_slice("utah-mass");
  CHECK(mass.site_names() == std::vector<std::string>{"UTAH", "MASS"});
  CHECK(mass.gpu_count() == 4);

  const Slice dgx = load_slice("dgx-a100-8");
  CHECK(dgx.vms.size() == 1);
  CHECK(dgx.gpu_count() == 8);
  CHECK(count_of(dgx, "GPU_A100_80GB") == 8);
  CHECK(dgx.vms[0].interconnect == "nvlink");
  CHECK(dgx.networks.empty());
}

TEST_CASE("gpus() lists VMs in canonical order (here the file's) and GPUs within each VM") {
  test::TempYaml tmp;
  const Slice s = load_slice(tmp.write("two.yaml", kTwoSites));
  CHECK(s.name == "two");  // from the file name when the file has none
  const auto gpus = s.gpus();
  REQUIRE(gpus.size() == 3);
  CHECK(gpus[0].index == 0);
  CHECK(gpus[1].vm == 0);
  CHECK(gpus[1].local == 1);
  CHECK(gpus[2].vm == 1);
  CHECK(gpus[2].local == 0);
  CHECK(gpus[2].index == 2);
  CHECK(gpus[2].type->name == "GPU_TeslaT4");
}

TEST_CASE("latency between VMs: the measured round trip across sites, the link class inside one") {
  const Catalog& cat = builtin_catalog();
  const Slice amst = load_slice("utah-amst");
  CHECK(amst.network_between("utah-vm", "amst-vm").name == "utah-amst-l2sts");
  CHECK(amst.one_way_latency_s("utah-vm", "amst-vm") ==
        doctest::Approx(0.103 / 2 + cat.link_class("l2sts").latency_s));
  CHECK_THROWS_WITH_AS(amst.network_between("utah-vm", "utah-vm"), doctest::Contains("same VM"),
                       Error);
  CHECK_THROWS_WITH_AS(amst.network_between("utah-vm", "mars-vm"), doctest::Contains("mars-vm"),
                       Error);

  const Slice tacc = load_slice("tacc");
  CHECK(tacc.one_way_latency_s("tacc-vm1", "tacc-vm2") ==
        doctest::Approx(cat.link_class("l2bridge").latency_s));

  const Slice mass = load_slice("utah-mass");  // estimated, so between neighbours' values
  const double mass_ms = mass.one_way_latency_s("utah-vm", "mass-vm") * 2e3;
  CHECK(mass_ms > 30);
  CHECK(mass_ms < 103);
}

TEST_CASE("override_wan_latency changes every inter-site round trip, not intra-site ones") {
  Slice amst = load_slice("utah-amst");
  override_wan_latency(amst, 0.010);
  CHECK(amst.networks[0].rtt_s == doctest::Approx(0.010));
  CHECK(amst.one_way_latency_s("utah-vm", "amst-vm") ==
        doctest::Approx(0.005 + amst.catalog->link_class("l2sts").latency_s));

  Slice tacc = load_slice("tacc");
  const double before = tacc.one_way_latency_s("tacc-vm1", "tacc-vm2");
  override_wan_latency(tacc, 0.050);
  CHECK(tacc.one_way_latency_s("tacc-vm1", "tacc-vm2") == doctest::Approx(before));

  CHECK_THROWS_AS(override_wan_latency(amst, -0.001), Error);
}

TEST_CASE("a switched network carries its given latency and an l2sts may set its own") {
  test::TempYaml tmp;
  const Slice s = load_slice(tmp.write("sw.yaml", R"(vms:
  - {name: a, site: UTAH, gpu: GPU_A30, gpus: 1, nic: NIC_Basic}
  - {name: b, site: UTAH, gpu: GPU_A30, gpus: 1, nic: NIC_Basic}
networks:
  - {name: lan, kind: switched, vms: [a, b], rtt_ms: 0.2, bandwidth_gbit_s: 10}
)"));
  CHECK(s.one_way_latency_s("a", "b") ==
        doctest::Approx(0.0001 + s.catalog->link_class("switched").latency_s));
  CHECK(s.networks[0].bandwidth == doctest::Approx(10e9 / 8));

  const Slice fast = load_slice(
      tmp.write("fast.yaml", replaced(kTwoSites, "vms: [a, b]}", "vms: [a, b], rtt_ms: 20}")));
  CHECK(fast.one_way_latency_s("a", "b") ==
        doctest::Approx(0.010 + fast.catalog->link_class("l2sts").latency_s));
}

TEST_CASE("unknown slice names and missing files are errors that help") {
  CHECK_THROWS_WITH_AS(load_slice("no-such-slice"), doctest::Contains("utah-amst"), Error);
  CHECK_THROWS_WITH_AS(load_slice("/nonexistent/slice.yaml"), doctest::Contains("not found"),
                       Error);
}

TEST_CASE("bad slice files are rejected with the file, the field and the rule") {
  test::TempYaml tmp;
  struct Case {
    std::string what;
    std::string text;
    std::vector<std::string> expected;
  };
  const std::string kBridge = "  - {name: lan, kind: l2bridge, vms: [a, c]}\n";
  const std::string kThirdVm =
      "  - {name: c, site: UTAH, gpu: GPU_A30, gpus: 1, nic: NIC_Basic}\nnetworks:";
  const std::vector<Case> cases = {
      {"unknown GPU type",
       replaced(kTwoSites, "GPU_TeslaT4", "GPU_Voodoo2"),
       {"vms[1].gpu", "GPU_Voodoo2", "GPU_RTX6000", "GPU_A30"}},
      {"unknown NIC",
       replaced(kTwoSites, "NIC_ConnectX_6", "NIC_Token_Ring"),
       {"vms[1].nic", "NIC_Token_Ring", "NIC_ConnectX_5"}},
      {"unknown site", replaced(kTwoSites, "site: AMST", "site: MARS"), {"vms[1].site", "MARS"}},
      {"negative latency",
       replaced(kTwoSites, "vms: [a, b]}", "vms: [a, b], rtt_ms: -3}"),
       {"networks[0].rtt_ms", "negative"}},
      {"missing latency on a one-site switched network",
       replaced(replaced(kTwoSites, "site: AMST", "site: UTAH"), "kind: l2sts, sites: [UTAH, AMST]",
                "kind: switched"),
       {"networks[0].rtt_ms", "missing"}},
      {"network naming a VM that does not exist",
       replaced(kTwoSites, "vms: [a, b]", "vms: [a, z]"),
       {"networks[0].vms", "'z'"}},
      {"network naming a site that does not exist",
       replaced(kTwoSites, "sites: [UTAH, AMST]", "sites: [UTAH, MARS]"),
       {"networks[0].sites", "MARS"}},
      {"l2sts naming three sites",
       replaced(kTwoSites, "sites: [UTAH, AMST]", "sites: [UTAH, AMST, TACC]"),
       {"networks[0].sites", "exactly two sites"}},
      {"l2sts inside one site",
       replaced(replaced(kTwoSites, "site: AMST", "site: UTAH"), "sites: [UTAH, AMST], ", ""),
       {"networks[0].sites", "exactly two sites"}},
      {"l2sts with a VM at a third site",
       replaced(kTwoSites, "sites: [UTAH, AMST]", "sites: [UTAH, TACC]"),
       {"networks[0].vms", "AMST"}},
      {"l2bridge across two sites",
       replaced(kTwoSites, "kind: l2sts, sites: [UTAH, AMST], ", "kind: l2bridge, "),
       {"networks[0].vms", "l2bridge", "one site"}},
      {"duplicate VM name",
       replaced(kTwoSites, "{name: b,", "{name: a,"),
       {"vms[1].name", "duplicate", "'a'"}},
      {"duplicate network name",
       kTwoSites + "  - {name: wan, kind: l2sts, vms: [a, b]}\n",
       {"networks[1].name", "duplicate", "'wan'"}},
      {"wrong YAML type",
       replaced(kTwoSites, "gpus: 1", "gpus: two"),
       {"vms[1].gpus", "integer", "two"}},
      {"vms not a list", "vms: {a: 1}\n", {"vms", "expected a list"}},
      {"unknown key",
       replaced(kTwoSites, "gpus: 1,", "gpus: 1, gpu_count: 1,"),
       {"vms[1].gpu_count", "unknown key"}},
      {"unknown top-level key", "colour: red\n" + kTwoSites, {"colour", "unknown key"}},
      {"a VM with no GPUs",
       replaced(kTwoSites, "gpus: 1", "gpus: 0"),
       {"vms[1].gpus", "at least 1"}},
      {"missing field",
       replaced(kTwoSites, "nic: NIC_Basic", "interconnect: pcie"),
       {"vms[0].nic", "missing"}},
      {"VMs at different sites with no network",
       replaced(kTwoSites, "  - {name: wan, kind: l2sts, sites: [UTAH, AMST], vms: [a, b]}\n", ""),
       {"no network joins", "'a'", "'b'"}},
      {"a third VM left out",
       replaced(kTwoSites, "networks:", kThirdVm),
       {"no network joins", "'c'"}},
      {"nvlink on a GPU without it",
       replaced(kTwoSites, "nic: NIC_ConnectX_6}", "nic: NIC_ConnectX_6, interconnect: nvlink}"),
       {"vms[1].interconnect", "GPU_TeslaT4", "NVLink"}},
      {"unknown network kind",
       replaced(kTwoSites, "kind: l2sts", "kind: smoke-signals"),
       {"networks[0].kind", "smoke-signals"}},
      {"no VMs", "vms: []\n", {"vms", "at least one VM"}},
      {"a key given twice",
       replaced(kTwoSites, "{name: b,", "{name: b, name: c,"),
       {"vms[1].name", "duplicate key"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::string path = tmp.write("bad.yaml", c.text);
    const std::string message = error_of(path);
    CAPTURE(message);
    CHECK(message.find(path) != std::string::npos);
    for (const auto& part : c.expected) {
      CAPTURE(part);
      CHECK(message.find(part) != std::string::npos);
    }
  }
  // The base text loads, and so does a third VM once networks join it to both others: the cases
  // above fail because of what they break, not because the base is wrong.
  CHECK_NOTHROW(load_slice(tmp.write("ok.yaml", kTwoSites)));
  const std::string three =
      replaced(replaced(kTwoSites, "networks:", kThirdVm), "vms: [a, b]}", "vms: [a, b, c]}");
  CHECK(load_slice(tmp.write("ok3.yaml", three + kBridge)).networks.size() == 2);
}

// Sizes within the limits, integers read strictly, numbers finite,
// one document per file.
TEST_CASE("slice numbers: strict integers, finite reals, limits and one YAML document") {
  test::TempYaml tmp;
  struct Case {
    std::string what, text, expected;
  };
  const std::vector<Case> cases = {
      {"octal", replaced(kTwoSites, "gpus: 2", "gpus: 010"),
       "vms[0].gpus: '010' has a leading zero"},
      {"hex", replaced(kTwoSites, "gpus: 2", "gpus: 0x2"), "vms[0].gpus: '0x2' is not an integer"},
      {"past int", replaced(kTwoSites, "gpus: 2", "gpus: 4294967298"),
       "vms[0].gpus: 4294967298 is out of range"},
      {"too many in one VM", replaced(kTwoSites, "gpus: 2", "gpus: 5000"),
       "vms[0].gpus is 5000; fabtrain handles at most 1024"},
      {"too many in all",
       replaced(replaced(kTwoSites, "gpus: 2", "gpus: 1024"), "GPU_TeslaT4, gpus: 1",
                "GPU_TeslaT4, gpus: 1024"),
       "the slice's GPU count (through vms[1]) is 2048; fabtrain handles at most 1024"},
      {"NaN latency", replaced(kTwoSites, "vms: [a, b]}", "vms: [a, b], rtt_ms: .nan}"),
       "rtt_ms: '.nan' is NaN"},
      {"infinite latency", replaced(kTwoSites, "vms: [a, b]}", "vms: [a, b], rtt_ms: .inf}"),
       "rtt_ms: '.inf' is infinite"},
      {"huge latency", replaced(kTwoSites, "vms: [a, b]}", "vms: [a, b], rtt_ms: 1e300}"),
       "fabtrain handles at most 10000 ms"},
      {"NaN bandwidth", replaced(kTwoSites, "vms: [a, b]}", "vms: [a, b], bandwidth_gbit_s: .nan}"),
       "bandwidth_gbit_s: '.nan' is NaN"},
      {"NaN window", replaced(kTwoSites, "vms: [a, b]}", "vms: [a, b], tcp_window_mib: .NaN}"),
       "tcp_window_mib: '.NaN' is NaN"},
      {"second document", kTwoSites + "---\nvms: []\n", "holds 2 YAML documents"},
      {"duplicate key", replaced(kTwoSites, "vms: [a, b]}", "vms: [a, b], rtt_ms: 5, rtt_ms: 500}"),
       "networks[0].rtt_ms: duplicate key"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::string message = error_of(tmp.write("bad.yaml", c.text));
    CAPTURE(message);
    CHECK(message.find(c.expected) != std::string::npos);
  }
  Slice s = load_slice(tmp.write("ok.yaml", kTwoSites));
  CHECK_THROWS_WITH_AS(override_wan_latency(s, 1e297),
                       doctest::Contains("fabtrain handles at most 10000 ms"), Error);
}

// Bytes that are not UTF-8 text (tests/fuzz/regressions/slice/invalid-utf8.yaml) are refused by
// their offset before the YAML parser reads them.
TEST_CASE("a slice file that is not UTF-8 text is refused before YAML reads it") {
  test::TempYaml tmp;
  std::string text = kTwoSites;
  text.insert(text.find("nic: NIC_Basic") + 11, std::string(40, '\xff'));
  CHECK(error_of(tmp.write("bytes.yaml", text)).find("is not UTF-8 text") != std::string::npos);
  CHECK(error_of(tmp.write("nul.yaml", kTwoSites + std::string(1, '\0')))
            .find("(0x00) is not UTF-8 text") != std::string::npos);
  CHECK(load_slice(tmp.write("accents.yaml", "description: Zürich, café\n" +
                                                 kTwoSites.substr(kTwoSites.find("vms:"))))
            .vms.size() == 2);
}

// A malformed flow mapping (tests/fuzz/regressions/slice/unclosed-flow-map.yaml; the fuzz
// regression test runs it under a time limit) is refused with the line and column where it breaks.
TEST_CASE("a malformed flow mapping is refused with its line and column") {
  const std::string path = source_dir() + "/tests/fuzz/regressions/slice/unclosed-flow-map.yaml";
  const std::string message = error_of(path);
  CAPTURE(message);
  CHECK(message.find(path + ": not valid YAML: line 2, column 3: ") == 0);
}
