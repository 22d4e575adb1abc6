// The sets of sites the search tries: interchangeable sites are one class; up to the exact budget
// every set (up to symmetry) is tried; beyond it, the family's floor of what it leaves out is a
// real lower bound of every set outside it; and on small generated slices the search's answer
// equals the exhaustive search's.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "common/error.hpp"
#include "platforms/slice_generator.hpp"
#include "selector/search.hpp"
#include "selector/site_sets.hpp"

using namespace fabtrain;

namespace {

Slice generated(int sites, std::uint64_t seed) {
  const auto path =
      std::filesystem::temp_directory_path() /
      ("fabtrain-site-sets-" + std::to_string(sites) + "-" + std::to_string(seed) + ".yaml");
  return write_slice(generate_fabric_slice(sites, seed, fabric_testbed()), path.string(),
                     builtin_catalog());
}

// A floor by GPU count: the more GPUs a set has, the lower its floor.
double by_count(const Slice& slice, const std::vector<std::string>& sites) {
  int n = 0;
  for (const auto& vm : slice.vms)
    if (std::find(sites.begin(), sites.end(), vm.site) != sites.end()) n += vm.gpus;
  return 1.0 / n;
}

}  // namespace

TEST_CASE("site sets: equal sites are one class, and a set takes a class's first members") {
  const Slice slice = load_slice("utah-amst");  // two VMs of 2 RTX 6000, no third site
  const auto classes = site_classes(slice);
  REQUIRE(classes.size() == 1);
  CHECK(classes[0].sites == std::vector<std::string>{"UTAH", "AMST"});
  const SiteSets sets = site_sets(slice, nullptr, false);
  CHECK(sets.exact);
  CHECK(sets.sets == std::vector<std::vector<std::string>>{{"UTAH"}, {"UTAH", "AMST"}});
  // Different hardware: two classes, every set.
  const Slice mixed = load_slice("utah-gpn");
  CHECK(site_classes(mixed).size() == 2);
  CHECK(site_sets(mixed, nullptr, false).sets.size() == 3);
}

TEST_CASE("site sets: beyond the exact budget, the floor of what is left out holds") {
  for (std::uint64_t seed : {1, 2, 3}) {
    CAPTURE(seed);
    const Slice slice = generated(12, seed);
    const auto floor = [&](const std::vector<std::string>& s) { return by_count(slice, s); };
    const SiteSets sets = site_sets(slice, floor, false);
    REQUIRE(!sets.exact);
    CHECK(sets.drop >= 1);
    CHECK(sets.sets.size() <= std::size_t(kExactSiteSets) + 12 * 12 + 12 * 11 / 2);
    // Every set of the 12 sites outside the family has a floor no lower than left_out_floor.
    const std::set<std::vector<std::string>> family(sets.sets.begin(), sets.sets.end());
    const auto order = slice.site_names();
    const auto classes = site_classes(slice);
    int outside = 0;
    for (int mask = 1; mask < (1 << order.size()); ++mask) {
      std::vector<std::string> set;
      for (std::size_t s = 0; s < order.size(); ++s)
        if (mask & (1 << s)) set.push_back(order[s]);
      if (family.count(set)) continue;
      ++outside;
      CHECK(floor(set) >= sets.left_out_floor * (1 - 1e-12));
    }
    CHECK(outside > 0);
  }
}

TEST_CASE("site sets: the generator draws the same slice from the same seed, within the rules") {
  const SliceDraft a = generate_fabric_slice(8, 7, fabric_testbed());
  const SliceDraft b = generate_fabric_slice(8, 7, fabric_testbed());
  CHECK(to_slice_yaml(a) == to_slice_yaml(b));
  CHECK(to_slice_yaml(a) != to_slice_yaml(generate_fabric_slice(8, 8, fabric_testbed())));
  const Slice slice = generated(8, 7);
  CHECK(slice.site_names().size() == 8);
  for (const auto& vm : slice.vms) {
    const auto gpu = std::find_if(fabric_testbed().gpus.begin(), fabric_testbed().gpus.end(),
                                  [&](const TestbedGpu& g) { return g.model == vm.gpu; });
    REQUIRE(gpu != fabric_testbed().gpus.end());
    CHECK(vm.gpus >= 1);
    CHECK(vm.gpus <= gpu->max_per_vm);
  }
  CHECK_THROWS_AS(generate_fabric_slice(0, 1, fabric_testbed()), Error);
  CHECK_THROWS_AS(generate_fabric_slice(31, 1, fabric_testbed()), Error);
}

TEST_CASE("site sets: on small generated slices the answer equals the exhaustive search's") {
  const ModelSpec model = load_model("gpt2");
  for (std::uint64_t seed : {1, 2, 3, 4}) {
    CAPTURE(seed);
    SliceDraft draft = generate_fabric_slice(3, seed, fabric_testbed());
    for (auto& vm : draft.vms) vm.gpus = 1;  // exhaustive stays seconds
    const auto path = std::filesystem::temp_directory_path() /
                      ("fabtrain-exact-" + std::to_string(seed) + ".yaml");
    const Slice slice = write_slice(draft, path.string(), builtin_catalog());
    SearchOptions o;
    o.exhaustive = true;
    const SearchResult all = search(model, slice, o);
    REQUIRE(!all.ranked.empty());
    o.exhaustive = false;
    o.keep_top = 1;
    const SearchResult best = search(model, slice, o);
    REQUIRE(!best.ranked.empty());
    CHECK(best.gap(o.objective) == 0);
    CHECK(best.ranked.front().tokens_per_s ==
          doctest::Approx(all.ranked.front().tokens_per_s).epsilon(1e-12));
  }
}
