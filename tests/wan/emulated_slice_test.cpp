// The emulated two-site slice is a slice like any other, and it describes the link that
// scripts/wan/up.sh makes: two sites, one CPU rank each, hosts named as the namespaces.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "common/data_dir.hpp"
#include "platforms/slice.hpp"

using namespace fabtrain;

TEST_CASE("emulated-2site: two sites, this machine's CPU, the link's delay, rate and window") {
  const Slice slice = load_slice("emulated-2site");
  CHECK(slice.site_names() == std::vector<std::string>{"EMU_SITE_A", "EMU_SITE_B"});
  REQUIRE(slice.vms.size() == 2);
  // The VM names are the namespaces' hostnames that mpirun-2site.sh's ranks see.
  CHECK(slice.vms[0].name == "siteA");
  CHECK(slice.vms[1].name == "siteB");
  CHECK(slice.gpu_count() == 2);
  for (const auto& gpu : slice.gpus()) CHECK(gpu.type->is_cpu);
  CHECK(slice.one_way_latency_s("siteA", "siteB") == doctest::Approx(0.025).epsilon(0.01));
  const Network& link = slice.network_between("siteA", "siteB");
  CHECK(link.bandwidth == doctest::Approx(1e9 / 8));
  CHECK(link.tcp_window_bytes == doctest::Approx(4.0 * 1024 * 1024));
}

TEST_CASE("emulated-2site: up.sh sets the TCP window the slice states") {
  std::ifstream script(source_dir() + "/scripts/wan/up.sh");
  REQUIRE(script.good());
  std::stringstream text;
  text << script.rdbuf();
  const Network& link = load_slice("emulated-2site").network_between("siteA", "siteB");
  const auto window = std::to_string(static_cast<long>(link.tcp_window_bytes));
  CHECK(text.str().find("wmem_max=" + window + " ") != std::string::npos);
}
