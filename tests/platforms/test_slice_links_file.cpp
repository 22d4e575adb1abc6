// Writing measured links into a slice file: the links section is replaced or added, the rest of
// the file (comments too) is kept, and what is written loads back with the same numbers.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "platforms/slice_links_file.hpp"
#include "temp_yaml.hpp"

using namespace fabtrain;

namespace {

const std::string kSlice = R"(# a comment that stays
name: probed
vms:
  - {name: a, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: NIC_Basic}
  - {name: b, site: STAR, gpu: GPU_RTX6000, gpus: 1, nic: NIC_Basic}
links:
  # an old measurement, replaced
  - {sites: [UTAH, STAR], rtt_ms: 99, source: "old"}
networks:  # after the links: kept
  - {name: v4, kind: fabnetv4, vms: [a, b]}
)";

SiteLink measured() {
  SiteLink l;
  l.a = "STAR", l.b = "UTAH";
  l.rtt_s = 0.0385, l.rtt_p90_s = 0.0412;
  l.bandwidth = 9.4e9 / 8, l.bandwidth_one_stream = 2.1e9 / 8, l.streams = 4;
  l.source = "fabtrain-exec probe 2026-12-01: \"ping-pong\" and TCP";
  return l;
}

}  // namespace

TEST_CASE("links file: the links section is replaced, the rest kept, and it loads back") {
  test::TempYaml dir;
  const std::string path = dir.write("probed.yaml", kSlice);
  write_slice_links(path, {measured()}, path, builtin_catalog());
  const std::string text = test::text_of(path);
  CHECK(text.find("# a comment that stays") != std::string::npos);
  CHECK(text.find("networks:  # after the links: kept") != std::string::npos);
  CHECK(text.find("old") == std::string::npos);
  const Slice s = load_slice(path);
  REQUIRE(s.links.size() == 1);
  CHECK(s.links[0].rtt_s == doctest::Approx(0.0385));
  CHECK(s.links[0].rtt_p90_s == doctest::Approx(0.0412));
  CHECK(s.links[0].bandwidth == doctest::Approx(9.4e9 / 8));
  CHECK(s.links[0].bandwidth_one_stream == doctest::Approx(2.1e9 / 8));
  CHECK(s.links[0].streams == 4);
  CHECK(s.links[0].source == measured().source);  // quotes survive
  CHECK(s.site_rtt(s.networks[0], "UTAH", "STAR").origin == "measured");
}

TEST_CASE(
    "links file: a slice without links gets a section; a bad link is refused, the file untouched") {
  test::TempYaml dir;
  const std::string none = with_links("vms: []\n", {});
  CHECK(none == "vms: []\n");
  std::string plain = kSlice;
  plain.erase(plain.find("links:"), plain.find("networks:") - plain.find("links:"));
  const std::string path = dir.write("plain.yaml", plain);
  write_slice_links(path, {measured()}, dir.path() / "out.yaml", builtin_catalog());
  CHECK(load_slice((dir.path() / "out.yaml").string()).links.size() == 1);
  SiteLink bad = measured();
  bad.b = "AMST";  // no VM there
  const std::string message =
      test::error_of([&] { write_slice_links(path, {bad}, path, builtin_catalog()); });
  CHECK(message.find("site AMST has no VM in this slice") != std::string::npos);
  CHECK(test::text_of(path) == plain);
}
