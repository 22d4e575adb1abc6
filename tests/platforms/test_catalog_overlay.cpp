// The user's own hardware: a catalog file (--catalog) or a slice's `catalog:` section adds GPU
// types, NICs and sites, or replaces built-in ones by name, under the built-in catalog's rules.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "platforms/slice.hpp"
#include "temp_yaml.hpp"

using namespace fabtrain;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string example(const std::string& name) {
  return source_dir() + "/platforms/data/examples/" + name;
}

// The example catalog's entries, indented to sit under a slice's `catalog:` key.
std::string as_section(const std::string& catalog_text) {
  std::string out = "catalog:\n";
  std::istringstream in(catalog_text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out += "  " + line + "\n";
  return out;
}

}  // namespace

TEST_CASE("--catalog: the example RTX 3090 catalog adds a site and replaces a built-in GPU type") {
  const Catalog& cat = catalog_with(example("rtx3090.catalog.yaml"));
  CHECK(&catalog_with(example("rtx3090.catalog.yaml")) == &cat);  // loaded once per path
  CHECK(&catalog_with("") == &builtin_catalog());
  const GpuType& g = cat.gpu("GPU_RTX3090");
  CHECK(g.memory_bytes == 24 * kGiB);
  CHECK(g.peak_fp32_flops == doctest::Approx(35.6e12));
  CHECK(g.source.find("whitepaper") != std::string::npos);
  CHECK(cat.site("MYLAB").latitude == doctest::Approx(41.88));
  CHECK(cat.gpu("GPU_RTX6000").memory_bytes == 24 * kGiB);  // built-ins stay
  CHECK(cat.link_classes.size() == builtin_catalog().link_classes.size());
  // The example's entry replaced the built-in one there; the built-in one is unchanged.
  CHECK(g.fp32_matmul_efficiency == 0);
  CHECK(builtin_catalog().gpu("GPU_RTX3090").fp32_matmul_efficiency == doctest::Approx(0.53));
  CHECK_THROWS_AS(builtin_catalog().site("MYLAB"), Error);

  const Slice lab = load_slice(example("rtx3090-lab.yaml"), cat);
  CHECK(lab.gpu_count() == 4);
  CHECK(lab.gpus()[0].type->name == "GPU_RTX3090");
  // Without the catalog the slice names a GPU type nobody knows.
  CHECK(test::error_of([&] {
          load_slice(example("rtx3090-lab.yaml"));
        }).find("unknown site 'MYLAB'") != std::string::npos);
}

TEST_CASE("a slice's catalog: section does the same, and a built-in name is replaced") {
  test::TempYaml dir;
  const std::string catalog = test::text_of(example("rtx3090.catalog.yaml"));
  std::string slice = test::text_of(example("rtx3090-lab.yaml"));
  slice = test::replaced_first(slice, "vms:\n", as_section(catalog) + "vms:\n");
  const Slice s = load_slice(dir.write("lab.yaml", slice));
  REQUIRE(s.own_catalog);
  CHECK(s.catalog == s.own_catalog.get());
  CHECK(s.gpus()[3].type->peak_fp16_flops == doctest::Approx(71e12));
  const Slice copy = s;  // copies keep the catalog alive and pointed at
  CHECK(copy.catalog->gpu("GPU_RTX3090").memory_bandwidth == doctest::Approx(936e9));

  const std::string nic = R"(nics:
  NIC_Basic:
    bandwidth_gbit_s: 25
    source: "measured: iperf3 -P 8 between two VMs, 2026-12-01"
)";
  const Catalog over = extend_catalog(builtin_catalog(), dir.write("nic.yaml", nic));
  CHECK(over.nic("NIC_Basic").bandwidth == doctest::Approx(25e9 / 8));
  CHECK(over.nic("NIC_ConnectX_6").bandwidth == builtin_catalog().nic("NIC_ConnectX_6").bandwidth);
  CHECK(over.path.find("nic.yaml") != std::string::npos);
}

TEST_CASE("the user's catalog follows the built-in rules: sources, units, strict keys") {
  test::TempYaml dir;
  const std::string good = test::text_of(example("rtx3090.catalog.yaml"));
  struct Case {
    std::string from, to, expected;
  };
  const std::vector<Case> cases = {
      {"    source: \"NVIDIA Ampere", "    sourc: \"NVIDIA Ampere",
       "gpus.GPU_RTX3090.sourc: unknown key"},
      {"    memory_gib: 24\n", "    memory_gb: 24\n", "gpus.GPU_RTX3090.memory_gb: unknown key"},
      {"    peak_fp32_tflops: 35.6", "    peak_fp32_tflops: -35.6",
       "gpus.GPU_RTX3090.peak_fp32_tflops: -35.6 must be positive"},
      {"latitude: 41.88", "latitude: 141.88", "sites.MYLAB.latitude: 141.88 is not in [-90, 90]"},
      {"gpus:\n", "gpu:\n", "gpu: unknown key"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.expected);
    const std::string path =
        dir.write("bad.catalog.yaml", test::replaced_first(good, c.from, c.to));
    const std::string message = test::error_of([&] { extend_catalog(builtin_catalog(), path); });
    CHECK(message.find(c.expected) != std::string::npos);
    CHECK(message.find("bad.catalog.yaml") != std::string::npos);
  }
  // A missing source is refused too, inside a slice with the place in the slice named.
  std::string no_source = good;
  no_source =
      test::replaced_first(no_source, no_source.substr(no_source.find("    source: \"NVIDIA")),
                           "sites:\n  MYLAB: {location: x, latitude: 1, longitude: 2}\n");
  std::string slice = test::replaced_first(test::text_of(example("rtx3090-lab.yaml")), "vms:\n",
                                           as_section(no_source) + "vms:\n");
  const std::string message = test::error_of([&] { load_slice(dir.write("lab.yaml", slice)); });
  CHECK(message.find("lab.yaml: catalog.gpus.GPU_RTX3090.source: missing") != std::string::npos);
}
