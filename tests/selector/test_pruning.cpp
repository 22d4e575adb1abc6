// Pruning keeps the best: on the built-in slices the pruned search's best plan (and, with
// keep_top, its whole top k) equals the exhaustive search's, because the plan floor never exceeds
// the full lower bound, which never exceeds the simulated step, and the memory floor never
// exceeds the schedule's memory estimate. Subsets of sites and GPUs stay in the space.
#include <doctest/doctest.h>

#include <set>

#include "common/data_dir.hpp"
#include "plan/default_batch.hpp"
#include "selector/search.hpp"
#include "sim/memory.hpp"
#include "sim/sim_pool.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

TEST_CASE(
    "pruning: the floors never exceed the full bound, the simulated step or the memory estimate") {
  for (const char* name : {"utah-gpn", "utah-amst"}) {
    CAPTURE(name);
    const Slice slice = load_slice(name);
    const ModelSpec model = load_model("gpt2-medium");
    SearchOptions o;
    o.exhaustive = true;
    o.space.recompute_only_if_needed = false;
    o.space.overlap_off_only_if_needed = false;
    const SearchResult all = search(model, slice, o);
    REQUIRE(all.ranked.size() > 50);
    const SimPool pool(slice, nullptr);
    const PlanFloor floor = pool.plan_floor(model, model.n_ctx, Precision::fp32);
    int pipelined = 0;
    for (const auto& e : all.ranked) {
      const Candidate& c = e.candidate;
      const Schedule schedule = compile(model, c.plan, c.global_batch, model.n_ctx);
      const double tokens = double(c.global_batch) * model.n_ctx;
      const double full = pool.step_lower_bound(schedule);
      CHECK(floor.seconds_per_token(c.plan, c.global_batch) * tokens <= full * (1 + 1e-9));
      CHECK(full <= e.step_time_s * (1 + 1e-9));
      CHECK(floor.short_of_memory(c.plan, c.global_batch, nullptr) ==
            -1);  // it fitted, so no floor may say otherwise
      pipelined += c.plan.pp > 1;
    }
    CHECK(pipelined > 10);
    // Every plan the floor calls out of memory is out of memory by the full estimate too, and the
    // rank the floor names needs at least the floor's bytes there (on GPUs of several sizes the
    // estimate's fullest rank may be another).
    for (const auto& c : enumerate_plans(model, slice, o.space)) {
      double bytes = 0;
      const int rank = floor.short_of_memory(c.plan, c.global_batch, &bytes);
      if (rank < 0) continue;
      const MemoryEstimate mem =
          estimate_memory(compile(model, c.plan, c.global_batch, model.n_ctx), slice);
      CHECK(mem.oom);
      CHECK(bytes <= mem.ranks[rank].peak_bytes() * (1 + 1e-9));
    }
  }
}

TEST_CASE(
    "pruning: on the built-in slices the pruned best and top 10 equal the exhaustive search's") {
  for (const std::string& name : builtin_slice_names()) {
    if (name == "dgx-a100-8") continue;  // eight GPUs on one node: exhaustive takes minutes
    CAPTURE(name);
    const Slice slice = load_slice(name);
    const ModelSpec model = load_model(name == "emulated-2site" ? "gpt2" : "gpt2-medium");
    SearchOptions o;
    o.exhaustive = true;
    const SearchResult all = search(model, slice, o);
    REQUIRE(!all.ranked.empty());
    o.exhaustive = false;
    const SearchResult per_set = search(model, slice, o);
    o.keep_top = 10;
    const SearchResult top = search(model, slice, o);
    CHECK(to_string(per_set.ranked.front().candidate.plan) ==
          to_string(all.ranked.front().candidate.plan));
    REQUIRE(top.ranked.size() >= std::min<size_t>(10, all.ranked.size()));
    for (size_t i = 0; i < std::min<size_t>(10, all.ranked.size()); ++i) {
      CAPTURE(i);
      CHECK(top.ranked[i].tokens_per_s ==
            doctest::Approx(all.ranked[i].tokens_per_s).epsilon(1e-12));
    }
    CHECK(to_string(top.ranked.front().candidate.plan) ==
          to_string(all.ranked.front().candidate.plan));
    CHECK(top.compiled < all.compiled);
  }
}

TEST_CASE("pruning: the 8-site bench slice keeps every subset of sites in the space") {
  const Slice slice = load_slice(source_dir() + "/bench/slices/fabric-8site.yaml");
  CHECK(slice.gpu_count() == 24);
  CHECK(slice.site_names().size() == 8);
  const auto subsets = gpu_subsets(slice, true);
  std::set<std::vector<std::string>> site_sets;
  std::set<size_t> sizes;
  for (const auto& s : subsets) site_sets.insert(s.sites), sizes.insert(s.gpus.size());
  CHECK(site_sets.size() == 255);  // every non-empty set of the 8 sites
  CHECK(*sizes.begin() == 1);
  CHECK(*sizes.rbegin() == 24);
}

TEST_CASE(
    "pruning: a bound from a plan's kept inputs equals its schedule's under other round trips") {
  const ModelSpec model = load_model("gpt2-medium");
  const Slice slice = load_slice("utah-amst");
  std::vector<Schedule> schedules;
  for (const char* text : {"dp=4,mb=4", "dp=2,pp=2,mb=8", "dp=1,pp=4,mb=16,schedule=gpipe",
                           "dp=2,tp=2,mb=2", "dp=4,mb=4,zero=2", "dp=2,pp=2,mb=8,zero=1"})
    schedules.push_back(compile(model, parse_plan(text), 16, model.n_ctx));
  // Kept at 103 ms; pools of one slice's shape share its platform, so one at a time.
  std::vector<BoundInputs> kept;
  std::vector<double> at_103ms;
  {
    const SimPool pool(slice, nullptr);
    for (const auto& s : schedules) {
      kept.push_back(pool.bound_inputs(s));
      at_103ms.push_back(pool.step_lower_bound(s));
      CHECK(pool.step_lower_bound(kept.back()) == doctest::Approx(at_103ms.back()).epsilon(1e-12));
    }
  }
  Slice nearer = slice;
  override_pair_latency(nearer, "UTAH", "AMST", 0.005);
  const SimPool pool(nearer, nullptr);
  int shorter = 0;
  for (std::size_t k = 0; k < schedules.size(); ++k) {
    CAPTURE(to_string(schedules[k].plan));
    const double at_5ms = pool.step_lower_bound(kept[k]);
    CHECK(at_5ms == doctest::Approx(pool.step_lower_bound(schedules[k])).epsilon(1e-12));
    shorter += at_5ms < at_103ms[k];
  }
  CHECK(shorter >= 4);  // the round trip reaches the bound of the plans that span both sites
}

// A slice at the limit of 1024 GPUs: 8 FABRIC sites on FABNetv4, each with 16 VMs of 8 GPUs.
std::string slice_of_1024_gpus() {
  std::string vms, names;
  const char* sites[] = {"UTAH", "MASS", "TACC", "WASH", "STAR", "MICH", "NCSA", "DALL"};
  for (int v = 0; v < 128; ++v) {
    vms += fmt::format(
        "  - {{name: vm{}, site: {}, gpu: GPU_A100_80GB, gpus: 8, nic: NIC_ConnectX_6}}\n", v,
        sites[v / 16]);
    names += fmt::format("{}vm{}", v ? ", " : "", v);
  }
  return "name: big\nvms:\n" + vms + "networks:\n  - {name: fab, kind: fabnetv4, vms: [" + names +
         "]}\n";
}

TEST_CASE(
    "pruning: on 1024 GPUs the counts per site thin out, and the floors stay below the bound") {
  test::TempDir dir("fabtrain-big-slice");
  const Slice slice = load_slice(dir.write("big.yaml", slice_of_1024_gpus()));
  REQUIRE(slice.gpu_count() == 1024);
  std::set<std::size_t> sizes;
  for (const auto& s : gpu_subsets_of(slice, slice.site_names())) sizes.insert(s.gpus.size());
  CHECK(sizes.size() == 40);  // 16 counts per site, then 8 per doubling up to all 128
  CHECK(sizes.count(8 * 16));
  CHECK(sizes.count(8 * 120));
  CHECK(!sizes.count(8 * 100));
  CHECK(*sizes.rbegin() == 1024);

  const ModelSpec model = load_model("gpt2-medium");
  const SimPool pool(slice, nullptr);
  const PlanFloor floor = pool.plan_floor(model, model.n_ctx, Precision::fp32);
  // How close the floor comes: tp=8's products are small, and their tile and wave losses on the
  // A100's SMs (sim/cost/matmul_efficiency.hpp), which the floor does not count (it takes the
  // chip's best product efficiency, 0.95 in FP32), more than triple the bound's compute.
  for (const auto& one :
       {std::pair{"dp=64,tp=8,pp=2,mb=2", 0.25}, std::pair{"dp=128,pp=8,mb=8,zero=1", 0.5}}) {
    const char* text = one.first;  // not a structured binding: CAPTURE's lambda takes it
    const double closeness = one.second;
    CAPTURE(text);
    Plan plan = parse_plan(text);
    for (int g = 0; g < plan.ranks(); ++g) plan.devices.push_back(g);
    const int batch = default_global_batch(plan);
    const double tokens = double(batch) * model.n_ctx;
    const double full = pool.step_lower_bound(compile(model, plan, batch, model.n_ctx));
    CHECK(floor.seconds_per_token(plan, batch) * tokens <= full * (1 + 1e-9));
    CHECK(floor.seconds_per_token(plan, batch) * tokens > closeness * full);
  }
}

TEST_CASE("pruning: a cap on GPUs given as a subset rule opens fewer subsets, same answer") {
  const ModelSpec model = load_model("gpt2");
  const Slice slice = load_slice("utah-gpn");
  SearchOptions plans_only;
  plans_only.keep_top = 1;
  plans_only.only = [](const Plan& p) { return p.ranks() <= 2; };
  SearchOptions with_subsets = plans_only;
  with_subsets.only_subsets = [](const GpuSubset& s) { return s.gpus.size() <= 2; };
  const SearchResult a = search(model, slice, plans_only);
  const SearchResult b = search(model, slice, with_subsets);
  REQUIRE(!a.ranked.empty());
  REQUIRE(!b.ranked.empty());
  CHECK(b.gap(with_subsets.objective) == 0);
  CHECK(to_string(b.ranked.front().candidate.plan) == to_string(a.ranked.front().candidate.plan));
  CHECK(b.ranked.front().tokens_per_s == a.ranked.front().tokens_per_s);
  CHECK(b.ranked.front().candidate.plan.ranks() <= 2);
  CHECK(b.subsets_opened < a.subsets_opened);
}
