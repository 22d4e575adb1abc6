// The printed launch line keeps MPI and NCCL on the slice's data plane (the networks the plan's
// ranks cross: their subnet or interface, else FABRIC's defaults, said as notes), runs the
// communicator the prediction assumed, and places ranks through a hostfile.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "platforms/data_plane.hpp"
#include "selector/launch_line.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using test::contains;

namespace {

Evaluated evaluated(const std::string& plan, int batch) {
  Evaluated e;
  e.candidate.plan = parse_plan(plan);
  e.candidate.global_batch = batch;
  return e;
}

bool any_note(const LaunchLine& l, const std::string& part) {
  for (const auto& n : l.notes)
    if (contains(n, part)) return true;
  return false;
}

// Two VMs at two sites joined by one network whose extra fields are `net_extra`.
std::string two_site_slice(const std::string& kind, const std::string& net_extra,
                           const std::string& vm_extra = "") {
  const std::string sites = kind == "l2sts" ? ", sites: [UTAH, AMST]" : "";
  return "name: t\nvms:\n"
         "  - {name: u, site: UTAH, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic" +
         vm_extra +
         "}\n"
         "  - {name: a, site: AMST, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic}\n"
         "networks:\n  - {name: net, kind: " +
         kind + sites + ", vms: [u, a]" + net_extra + "}\n";
}

}  // namespace

TEST_CASE("the emulated two-site slice's line keeps Open MPI on its TEST-NET subnet") {
  const Slice slice = load_slice("emulated-2site");
  const LaunchLine l = launch_line("gpt2-nano", slice, evaluated("dp=2", 8), 64);
  CHECK(l.comm == "mpi");
  CHECK(contains(l.command, " --mca btl_tcp_if_include 192.0.2.0/24"));
  CHECK(contains(l.command, " --mca oob_tcp_if_include 192.0.2.0/24"));
  CHECK_FALSE(contains(l.command, "NCCL_SOCKET_IFNAME"));  // the CPU executor runs Open MPI
  CHECK_FALSE(contains(l.command, "if_exclude"));
  // The interface options belong to mpirun, before the program.
  CHECK(l.command.find("oob_tcp_if_include") < l.command.find(" fabtrain-exec "));
}

TEST_CASE("a GPU slice over NCCL names NCCL's interface; over Open MPI the run uses --comm mpi") {
  Slice slice = load_slice("utah-amst");  // l2sts without subnet or interface
  const Evaluated e = evaluated("dp=2,pp=2,mb=8,devices=0:1:2:3", 32);
  LaunchLine l = launch_line("gpt2-medium", slice, e, 1024);
  CHECK(l.comm == "nccl");
  CHECK(contains(l.command, " --mca btl_tcp_if_exclude lo,enp3s0"));
  CHECK(contains(l.command, " --mca oob_tcp_if_exclude lo,enp3s0"));
  CHECK(contains(l.command, " -x 'NCCL_SOCKET_IFNAME=^lo,docker,enp3s0' "));
  CHECK_FALSE(contains(l.command, "--comm"));
  CHECK(any_note(l, "network utah-amst-l2sts names no interface"));
  use_communicator(slice, "openmpi-tcp");
  l = launch_line("gpt2-medium", slice, e, 1024);
  CHECK(l.comm == "mpi");
  CHECK(contains(l.command, " --device cuda --comm mpi"));
  CHECK_FALSE(contains(l.command, "NCCL_SOCKET_IFNAME"));
  // One VM: no network is crossed, no interface to choose.
  l = launch_line("gpt2-medium", slice, evaluated("dp=2,devices=0:1", 16), 1024);
  CHECK_FALSE(contains(l.command, "_tcp_if_"));
  CHECK(l.notes.empty());
}

TEST_CASE("a network's interface and subnet win; FABNetv4 without them gets FABRIC's block") {
  test::TempDir dir("fabtrain-launch");
  const Evaluated e = evaluated("dp=4,devices=0:1:2:3", 32);
  const Slice named =
      load_slice(dir.write("named.yaml", two_site_slice("l2sts",
                                                        ", subnet: 192.168.10.0/24, "
                                                        "interface: enp7s0")));
  LaunchLine l = launch_line("gpt2-medium", named, e, 1024);
  CHECK(contains(l.command, " --mca btl_tcp_if_include enp7s0 --mca oob_tcp_if_include enp7s0"));
  CHECK(contains(l.command, " -x NCCL_SOCKET_IFNAME=enp7s0 "));
  REQUIRE(l.notes.size() == 1);  // no interface assumed; the VMs' addresses are asked for
  CHECK(contains(l.notes[0], "VMs u, a have no `address:` in the slice"));
  const Slice subnet_only =
      load_slice(dir.write("subnet.yaml", two_site_slice("l2sts", ", subnet: 192.168.10.0/24")));
  l = launch_line("gpt2-medium", subnet_only, e, 1024);
  CHECK(contains(l.command, " --mca btl_tcp_if_include 192.168.10.0/24"));
  CHECK(contains(l.command, "NCCL_SOCKET_IFNAME=^lo,docker,enp3s0"));  // NCCL takes names only
  const Slice fabnet = load_slice(dir.write("fabnet.yaml", two_site_slice("fabnetv4", "")));
  l = launch_line("gpt2-medium", fabnet, e, 1024);
  CHECK(contains(l.command, " --mca btl_tcp_if_include 10.128.0.0/10"));
  CHECK(any_note(l, "10.128.0.0/10 assumed"));
  const DataPlaneSelection dp = data_plane_for(fabnet, {"u", "a"}, true);
  REQUIRE(dp.networks.size() == 1);
  CHECK(dp.networks[0]->name == "net");
}

TEST_CASE("the hostfile places ranks as --host did, with the VMs' addresses where given") {
  test::TempDir dir("fabtrain-launch");
  const Slice slice = load_slice(dir.write(
      "addr.yaml", two_site_slice("l2sts", ", subnet: 10.0.0.0/24", ", address: 10.0.0.1")));
  LaunchLine l =
      launch_line("gpt2-medium", slice, evaluated("dp=4,devices=0:1:2:3", 32), 1024, "my.hosts");
  CHECK(l.command.find("mpirun -np 4 --hostfile my.hosts ") == 0);
  CHECK_FALSE(contains(l.command, "--host "));
  CHECK(contains(l.hostfile, "\n10.0.0.1 slots=2\na slots=2\n"));
  CHECK(any_note(l, "VM a has no `address:` in the slice, so the hostfile names it by VM name"));
  CHECK_FALSE(any_note(l, "VM u"));
  CHECK(l.rank_vms == std::vector<std::string>{"u", "u", "a", "a"});
  // Ranks alternating between the VMs: one line per rank under the sequential mapper.
  l = launch_line("gpt2-medium", slice, evaluated("dp=4,devices=0:2:1:3", 32), 1024, "my.hosts");
  CHECK(contains(l.command, "--mca rmaps seq --hostfile my.hosts "));
  CHECK(contains(l.hostfile, "\n10.0.0.1\na\n10.0.0.1\na\n"));
  l = launch_line("gpt2-medium", slice, evaluated("dp=4,devices=0:1:2:3", 32), 1024);
  CHECK(contains(l.command, "--host 10.0.0.1:2,a:2 "));
}

TEST_CASE("a slice's subnet, interface or address that is not one is refused by field") {
  test::TempDir dir("fabtrain-launch");
  auto error = [&](const std::string& text) {
    return test::error_of([&] { load_slice(dir.write("bad.yaml", text)); });
  };
  CHECK(contains(error(two_site_slice("l2sts", ", subnet: 10.0.0.0/33")),
                 "networks[0].subnet: '10.0.0.0/33' is not a subnet"));
  CHECK(contains(error(two_site_slice("l2sts", ", subnet: 10.0.0.1")), "is not a subnet"));
  CHECK(contains(error(two_site_slice("l2sts", ", subnet: ten/8")), "is not a subnet"));
  CHECK(contains(error(two_site_slice("l2sts", ", interface: 'en p7'")),
                 "networks[0].interface: 'en p7' is not a network interface name"));
  CHECK(contains(error(two_site_slice("l2sts", ", interface: averyveryverylongname")),
                 "is not a network interface name"));
  CHECK(contains(error(two_site_slice("l2sts", "", ", address: 'a b'")),
                 "vms[0].address: 'a b' is not a host name"));
}
