// `fabtrain slice import`: the five saved-slice fixtures (tests/platforms/fablib, written from
// the FIM schema by make_fixtures.py) map onto the VMs, GPUs, NICs, hosts, networks and data-plane
// addresses they hold,
// the written slice loads back, and files that are not fablib slices are refused by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "common/limits.hpp"
#include "platforms/data_plane.hpp"
#include "platforms/fablib_import.hpp"
#include "platforms/property_graph.hpp"
#include "temp_yaml.hpp"

using namespace fabtrain;

namespace {

std::string fixture(const std::string& name) {
  return source_dir() + "/tests/platforms/fablib/" + name;
}

const ImportedVm& vm_named(const ImportedSlice& s, const std::string& name) {
  const auto it =
      std::find_if(s.vms.begin(), s.vms.end(), [&](auto& v) { return v.vm.name == name; });
  REQUIRE_MESSAGE(it != s.vms.end(), name);
  return *it;
}

// The imported slice written out and loaded back like any slice file.
Slice round_trip(const ImportedSlice& imported, const test::TempYaml& dir) {
  return load_slice(dir.write(imported.name + ".yaml", to_slice_yaml(imported)));
}

std::string import_error(const std::string& path) {
  return test::error_of([&] { import_fablib_slice(path, builtin_catalog()); });
}

bool contains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](auto& l) { return l.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("import: a two-site L2STS slice keeps its GPU VMs and leaves the GPU-less VM out") {
  const ImportedSlice s = import_fablib_slice(fixture("two-site-l2sts.graphml"), builtin_catalog());
  CHECK(s.format == "GraphML");
  REQUIRE(s.vms.size() == 2);
  const Vm& utah = vm_named(s, "utah-vm").vm;
  CHECK(utah.site == "UTAH");
  CHECK(utah.gpu == "GPU_RTX6000");
  CHECK(utah.gpus == 2);
  CHECK(utah.nic == "NIC_Basic");
  CHECK(vm_named(s, "utah-vm").capacities == "16 cores, 64 GB RAM, 100 GB disk");
  CHECK(contains(s.left_out, "utah-monitor"));
  REQUIRE(s.networks.size() == 1);
  CHECK(s.networks[0].kind == "l2sts");
  CHECK(s.networks[0].vms == std::vector<std::string>{"utah-vm", "amst-vm"});

  test::TempYaml dir;
  const Slice slice = round_trip(s, dir);
  CHECK(slice.gpu_count() == 4);
  CHECK(slice.networks[0].sites == std::vector<std::string>{"UTAH", "AMST"});
  // No latency in the saved file: the catalog's measured UTAH-AMST round trip applies.
  CHECK(slice.site_rtt(slice.networks[0], "UTAH", "AMST").value == doctest::Approx(0.103));
}

TEST_CASE("import: a three-site mesh of L2STS and L2PTP over two-port SmartNICs") {
  const ImportedSlice s =
      import_fablib_slice(fixture("three-site-mesh.graphml"), builtin_catalog());
  REQUIRE(s.vms.size() == 3);
  CHECK(vm_named(s, "tacc-vm").vm.gpu == "GPU_A30");
  CHECK(vm_named(s, "utah-vm").vm.gpu == "GPU_A40");
  CHECK(vm_named(s, "mass-vm").vm.gpu == "GPU_TeslaT4");
  CHECK(vm_named(s, "tacc-vm").vm.nic == "NIC_ConnectX_6");
  CHECK(vm_named(s, "mass-vm").vm.nic == "NIC_ConnectX_5");
  REQUIRE(s.networks.size() == 3);
  CHECK(s.networks[2].name == "tacc-mass");
  CHECK(s.networks[2].kind == "l2ptp");
  CHECK(s.networks[2].vms == std::vector<std::string>{"tacc-vm", "mass-vm"});
  test::TempYaml dir;
  const Slice slice = round_trip(s, dir);
  // Each pair has its own network: the port of each VM that the network reaches does not leak
  // into the others.
  CHECK(slice.network_between("tacc-vm", "utah-vm").name == "tacc-utah");
  CHECK(slice.network_between("utah-vm", "mass-vm").name == "utah-mass");
  CHECK(slice.network_between("mass-vm", "tacc-vm").name == "tacc-mass");
}

TEST_CASE("import: FABNetv4 services, one per site, become one routed network (node-link JSON)") {
  const ImportedSlice s = import_fablib_slice(fixture("fabnetv4.json"), builtin_catalog());
  CHECK(s.format == "node-link JSON");
  REQUIRE(s.networks.size() == 1);
  CHECK(s.networks[0].kind == "fabnetv4");
  CHECK(s.networks[0].vms.size() == 3);
  CHECK(vm_named(s, "ncsa-vm").vm.nic == "NIC_ConnectX_7_100");
  CHECK(vm_named(s, "ncsa-vm").vm.gpus == 2);
  CHECK(contains(s.assumptions, "one routed network"));
  test::TempYaml dir;
  const Slice slice = round_trip(s, dir);
  CHECK(slice.site_names().size() == 3);
  CHECK(slice.network_between("star-vm", "wash-vm").kind == "fabnetv4");
  // Between sites the routed network's latency is its class's hop plus half the estimated trip.
  const double one_way = slice.one_way_latency_s("star-vm", "wash-vm");
  CHECK(one_way == doctest::Approx(builtin_catalog().link_class("fabnetv4").latency_s +
                                   builtin_catalog().latency("STAR", "WASH").rtt_s / 2));
}

TEST_CASE("import: an instantiated slice records which VMs share a physical host") {
  const ImportedSlice s = import_fablib_slice(fixture("instantiated.graphml"), builtin_catalog());
  REQUIRE(s.vms.size() == 3);
  CHECK(vm_named(s, "utah-a").vm.host == "utah-w3.fabric-testbed.net");
  CHECK(vm_named(s, "utah-b").vm.host == vm_named(s, "utah-a").vm.host);
  CHECK(vm_named(s, "utah-c").vm.host == "utah-w5.fabric-testbed.net");
  CHECK(contains(s.assumptions, "reservation state Active"));
  REQUIRE(s.networks.size() == 1);
  CHECK(s.networks[0].kind == "l2bridge");
  test::TempYaml dir;
  const Slice slice = round_trip(s, dir);
  CHECK(slice.vms[1].host == "utah-w3.fabric-testbed.net");
}

TEST_CASE("import: an instantiated slice's data-plane addresses, subnets and devices are kept") {
  const ImportedSlice s = import_fablib_slice(fixture("addressed.graphml"), builtin_catalog());
  REQUIRE(s.networks.size() == 2);
  const Network& wan = s.networks[0];
  CHECK(wan.kind == "l2sts");
  CHECK(wan.subnet == "192.168.10.0/24");  // fablib's subnet of an L2 network
  CHECK(wan.interface == "enp7s0");        // the same device on both VMs
  const Network& routed = s.networks[1];
  CHECK(routed.kind == "fabnetv4");
  CHECK(routed.subnet.empty());  // one subnet per site: none is one network's
  CHECK(routed.interface.empty());
  CHECK(contains(s.assumptions, "a subnet per site (10.132.1.0/24, 10.140.3.0/24)"));
  CHECK(contains(s.assumptions, "differently named devices (enp9s0 (amst-vm), enp8s0 (utah-vm))"));
  // Each VM's address: the one on the first network that gives it, with the others said.
  CHECK(vm_named(s, "utah-vm").vm.address == "192.168.10.1");
  CHECK(vm_named(s, "amst-vm").vm.address == "192.168.10.2");
  CHECK(contains(s.assumptions,
                 "VM 'utah-vm' has addresses on 2 networks (10.132.1.2 (fabnetv4), "
                 "192.168.10.1 (wan))"));
  // Written and loaded back, the launch line selects the data plane by the imported values.
  test::TempYaml dir;
  const Slice slice = round_trip(s, dir);
  CHECK(slice.vms[0].address.rfind("192.168.10.", 0) == 0);
  const DataPlaneSelection plane = data_plane_for(slice, {"utah-vm", "amst-vm"}, true);
  REQUIRE(plane.networks.size() == 1);
  CHECK(plane.networks[0]->name == "wan");
  CHECK(plane.mpi_include == std::vector<std::string>{"enp7s0"});  // the device both VMs name
  CHECK(plane.nccl_socket_ifname == "enp7s0");
}

TEST_CASE("import: a malformed subnet in a saved slice is refused by network") {
  const std::string text = test::text_of(fixture("addressed.graphml"));
  test::TempYaml dir;
  const std::string bad =
      dir.write("bad.graphml", test::replaced_first(text, "192.168.10.0/24", "192.168.10.0/99"));
  CHECK(import_error(bad).find("network 'wan' subnet") != std::string::npos);
}

TEST_CASE("import: unknown GPU and NIC models are refused by name with the known ones") {
  test::TempYaml dir;
  const std::string mesh = test::text_of(fixture("three-site-mesh.graphml"));
  const std::string gpu = import_error(
      dir.write("gpu.graphml", test::replaced_first(mesh, ">Tesla T4<", ">RTX 3090<")));
  CHECK(gpu.find("unknown GPU model 'RTX 3090'") != std::string::npos);
  CHECK(gpu.find("mass-vm-gpu0") != std::string::npos);
  CHECK(gpu.find("GPU Tesla T4") != std::string::npos);
  const std::string nic = import_error(
      dir.write("nic.graphml", test::replaced_first(mesh, ">ConnectX-5<", ">ConnectX-9<")));
  CHECK(nic.find("unknown NIC model 'ConnectX-9'") != std::string::npos);
  CHECK(nic.find("SmartNIC BlueField-2-ConnectX-6") != std::string::npos);
}

TEST_CASE("import: a VM with no site, two GPU types in a VM, an unknown site") {
  test::TempYaml dir;
  const std::string two = test::text_of(fixture("two-site-l2sts.graphml"));
  // The first VM's Site is the first <data> of key d10 (Site) in the file.
  const std::string no_site = import_error(
      dir.write("nosite.graphml", test::replaced_first(two, "<data key=\"d10\">UTAH</data>", "")));
  CHECK(no_site.find("VM 'utah-vm' has no Site") != std::string::npos);
  CHECK(no_site.find("nosite.graphml") != std::string::npos);
  const std::string site =
      import_error(dir.write("site.graphml", test::replaced_first(two, ">AMST<", ">NOWHERE<")));
  CHECK(site.find("site 'NOWHERE'") != std::string::npos);
  CHECK(site.find("--catalog") != std::string::npos);
  const std::string mixed =
      import_error(dir.write("mixed.graphml", test::replaced_first(two, ">RTX6000<", ">A40<")));
  CHECK(mixed.find("two types") != std::string::npos);
}

TEST_CASE("import: files that are not saved fablib slices get a clear error, never a crash") {
  test::TempYaml dir;
  const std::string two = test::text_of(fixture("two-site-l2sts.graphml"));
  const std::string json = test::text_of(fixture("fabnetv4.json"));
  struct Case {
    std::string name, text, expected;
  };
  const std::vector<Case> cases = {
      {"empty.graphml", "", "empty file"},
      {"slice.yaml", "vms: []\n", "neither GraphML nor node-link JSON"},
      {"cut.graphml", two.substr(0, two.size() / 2), "not well-formed XML"},
      {"html.graphml", "<html><body/></html>", "not <graphml>"},
      {"cut.json", json.substr(0, json.size() / 2), "not valid JSON"},
      {"list.json", "{\"a\": [1, 2]}", "no \"nodes\" list"},
      {"plain.graphml",
       "<graphml><graph><node id=\"a\"/><node id=\"b\"/><edge source=\"a\" "
       "target=\"b\"/></graph></graphml>",
       "no vertex has a Class"},
      {"dangling.graphml", test::replaced_first(two, "<edge source=\"", "<edge source=\"missing-"),
       "is not a vertex"},
      {"badkey.graphml", test::replaced_first(two, "<data key=\"d8\">", "<data key=\"d99\">"),
       "names no <key>"},
      {"nogpu.json", test::replaced_all(json, "\"GPU\"", "\"NVME\""), "VMs has a GPU"},
      {"badcap.graphml", test::replaced_first(two, "{\"core\": 16", "{\"core\": "),
       "Capacities: not valid JSON"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const std::string message = import_error(dir.write(c.name, c.text));
    CHECK(message.find(c.expected) != std::string::npos);
    CHECK(message.find(c.name) != std::string::npos);
  }
  CHECK(import_error((dir.path() / "absent.graphml").string()).find("cannot read") !=
        std::string::npos);
}

TEST_CASE("import: nesting, sizes and counts past the stated limits are refused by name") {
  test::TempYaml dir;
  const std::string two = test::text_of(fixture("two-site-l2sts.graphml"));
  const std::string json = test::text_of(fixture("fabnetv4.json"));
  const std::string brackets = std::string(100'000, '[') + std::string(100'000, ']');
  std::string elements;
  for (int i = 0; i < 100; ++i) elements += "<x>";
  for (int i = 0; i < 100; ++i) elements += "</x>";
  struct Case {
    std::string name, text, expected;
  };
  const std::vector<Case> cases = {
      {"deep.json", test::replaced_first(json, "\"default_ubuntu_22,qcow2\"", brackets),
       "the JSON nesting depth (line 15) is 257; fabtrain handles at most 256"},
      {"deepattr.json",
       test::replaced_first(json, "\"{\\\"core\\\": 16, \\\"ram\\\": 64, \\\"disk\\\": 100}\"",
                            "\"" + brackets + "\""),
       "Capacities: the JSON nesting depth is 257"},
      {"deep.graphml", test::replaced_first(two, "</graphml>", elements + "</graphml>"),
       "the XML depth (at <x>) is 65; fabtrain handles at most 64"},
      {"bigattr.graphml",
       test::replaced_first(two, ">utah-vm<", ">" + std::string(2 << 20, 'v') + "<"),
       "the length of <data key=\"d8\"> in bytes is 2097152; fabtrain handles at most 1048576"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const std::string message = import_error(dir.write(c.name, c.text));
    CHECK(message.find(c.expected) != std::string::npos);
    CHECK(message.find(c.name) != std::string::npos);
  }
  const std::string big = dir.write("big.graphml", two);
  std::filesystem::resize_file(big, std::uintmax_t(limits::saved_slice_bytes.max) + 1);
  CHECK(import_error(big).find("the size in bytes is 67108865; fabtrain handles at most") !=
        std::string::npos);
}

TEST_CASE("import: twenty thousand networks of one name are read in linear time") {
  test::TempYaml dir;
  std::string services;
  for (int i = 0; i < 20'000; ++i)
    services += fmt::format(
        "{{\"id\": \"net{}\", \"Class\": \"NetworkService\", \"Type\": \"L2STS\", \"Name\": "
        "\"net\"}},\n",
        i);
  const std::string json = test::replaced_first(test::text_of(fixture("fabnetv4.json")),
                                                "\"nodes\": [", "\"nodes\": [" + services);
  const auto start = std::chrono::steady_clock::now();
  const ImportedSlice s = import_fablib_slice(dir.write("many.json", json), builtin_catalog());
  CHECK(contains(s.left_out, "network 'net-20000' (l2sts): joins 0 VMs with a GPU"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("import: twenty thousand GPU VMs are refused by the GPU limit in linear time") {
  test::TempYaml dir;
  std::string vms, edges;
  for (int i = 0; i < 20'000; ++i) {
    vms += fmt::format(
        "{{\"id\": \"vm{0}\", \"Class\": \"NetworkNode\", \"Type\": \"VM\", \"Name\": "
        "\"vm{0}\", \"Site\": \"STAR\"}},\n{{\"id\": \"gpu{0}\", \"Class\": \"Component\", "
        "\"Type\": \"GPU\", \"Name\": \"gpu{0}\", \"Model\": \"RTX6000\"}},\n",
        i);
    edges +=
        fmt::format("{{\"source\": \"vm{0}\", \"target\": \"gpu{0}\", \"Class\": \"has\"}},", i);
  }
  std::string json = test::replaced_first(test::text_of(fixture("fabnetv4.json")), "\"nodes\": [",
                                          "\"nodes\": [" + vms);
  json = test::replaced_first(json, "\"links\": [", "\"links\": [" + edges);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = import_error(dir.write("many-vms.json", json));
  CAPTURE(message);
  CHECK(message.find("GPU count (through VM 'vm1024') is 1025; fabtrain handles at most 1024") !=
        std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("import: an edge between a VM and its GPU given twice is one GPU") {
  test::TempYaml dir;
  const std::string edge =
      "{\"source\": \"00000000-0000-0000-0000-0000002dc6c0\", \"target\": "
      "\"00000000-0000-0000-0000-0000002dc6c1\", \"Class\": \"has\"},";
  const std::string json = test::replaced_first(test::text_of(fixture("fabnetv4.json")),
                                                "\"links\": [", "\"links\": [" + edge + edge);
  const ImportedSlice s = import_fablib_slice(dir.write("twice.json", json), builtin_catalog());
  CHECK(vm_named(s, "star-vm").vm.gpus == 1);
}
