// The order in which a slice file lists its VMs does not change the answer: VMs are put in one
// canonical order when loaded (strongest site first, strongest VM first within a site), so the
// chosen plan places the same work on the same VMs and predicts the same step time.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>

#include "selector/search.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

// Three VMs at two sites, of three GPU types, listed in the given order.
std::string slice_text(const std::vector<int>& order) {
  const std::vector<std::string> vms = {
      "  - {name: utah-a30, site: UTAH, gpu: GPU_A30, gpus: 2, nic: NIC_Basic}\n",
      "  - {name: utah-rtx, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: NIC_Basic}\n",
      "  - {name: amst-t4, site: AMST, gpu: GPU_TeslaT4, gpus: 2, nic: NIC_Basic}\n"};
  std::string text = "name: shuffled\nvms:\n";
  for (int i : order) text += vms[i];
  return text +
         "networks:\n"
         "  - {name: utah, kind: l2bridge, vms: [utah-a30, utah-rtx]}\n"
         "  - {name: wan, kind: l2sts, sites: [UTAH, AMST], vms: [amst-t4, utah-a30, utah-rtx]}\n";
}

// What the chosen plan runs where: its text without devices, and each rank's VM and GPU type.
std::string placed(const Evaluated& e, const Slice& slice) {
  Plan p = e.candidate.plan;
  const auto gpus = slice.gpus();
  std::string where;
  for (int r = 0; r < p.ranks(); ++r) {
    const SliceGpu& g = gpus.at(device_of(p, r));
    where += " " + slice.vms[g.vm].name + "/" + g.type->name;
  }
  p.devices.clear();
  return to_string(p) + " on" + where;
}

}  // namespace

TEST_CASE("listing a slice's VMs in another order gives the same plan on the same VMs and time") {
  test::TempDir dir("fabtrain-vm-order");
  const ModelSpec model = load_model("gpt2-nano");
  SearchOptions options;
  options.train_tokens = 1e8;
  options.workers = 1;
  options.keep_top = 3;
  std::string first_plan;
  double first_step = 0;
  std::vector<int> order = {0, 1, 2};
  int n = 0;
  do {
    const Slice slice = load_slice(dir.write(fmt::format("s{}.yaml", n++), slice_text(order)));
    // Canonical order: the stronger site (two A30 and an RTX 6000) first, in it the VM of the
    // higher FP32 peak (RTX 6000: 16.3 TFLOP/s, A30: 10.3) first.
    REQUIRE(slice.vms.size() == 3);
    CHECK(slice.vms[0].name == "utah-rtx");
    CHECK(slice.vms[1].name == "utah-a30");
    CHECK(slice.vms[2].name == "amst-t4");
    const SearchResult r = search(model, slice, options);
    REQUIRE_FALSE(r.ranked.empty());
    const std::string plan = placed(r.ranked.front(), slice);
    if (first_plan.empty()) {
      first_plan = plan, first_step = r.ranked.front().step_time_s;
      continue;
    }
    CHECK(plan == first_plan);
    CHECK(r.ranked.front().step_time_s == doctest::Approx(first_step).epsilon(1e-12));
  } while (std::next_permutation(order.begin(), order.end()));
  CHECK(n == 6);
}
