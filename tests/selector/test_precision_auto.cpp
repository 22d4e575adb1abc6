// --precision auto: tf32 on the GPU subsets whose every GPU has TF32, fp32 on the others (one
// precision per plan, as the executor runs it); what a slice's GPUs lack is known before a search.
#include <doctest/doctest.h>

#include "selector/enumerate.hpp"
#include "selector/search.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

// Two A30 at UTAH (TF32) and two RTX 6000 at AMST (Turing: no TF32).
Slice mixed_slice(const test::TempDir& dir) {
  return load_slice(
      dir.write("mixed.yaml",
                "name: mixed\nvms:\n"
                "  - {name: u, site: UTAH, gpu: GPU_A30, gpus: 2, nic: NIC_Basic}\n"
                "  - {name: a, site: AMST, gpu: GPU_RTX6000, gpus: 2, nic: NIC_Basic}\n"
                "networks:\n  - {name: n, kind: l2sts, sites: [UTAH, AMST], vms: [u, a]}\n"));
}

}  // namespace

TEST_CASE("precision auto gives tf32 to subsets of TF32 GPUs and fp32 to the others") {
  test::TempDir dir("fabtrain-precision");
  const Slice slice = mixed_slice(dir);
  std::vector<int> a30, rtx;  // GPU indices by type (the slice's canonical order decides them)
  for (const auto& g : slice.gpus()) (g.type->name == "GPU_A30" ? a30 : rtx).push_back(g.index);
  REQUIRE(a30.size() == 2);
  REQUIRE(rtx.size() == 2);
  SearchSpace space;
  space.precision = Precision::tf32;
  space.precision_where_supported = true;
  CHECK(precision_on(slice, a30, space) == Precision::tf32);
  CHECK(precision_on(slice, {a30[0], rtx[0]}, space) == Precision::fp32);
  CHECK(precision_on(slice, rtx, space) == Precision::fp32);
  space.precision_where_supported = false;
  CHECK(precision_on(slice, rtx, space) == Precision::tf32);  // as asked: the caller checks
  CHECK(has_precision(*slice.gpus()[a30[0]].type, Precision::tf32));
  CHECK_FALSE(has_precision(*slice.gpus()[rtx[0]].type, Precision::tf32));
  CHECK(has_precision(*slice.gpus()[rtx[0]].type, Precision::fp32));
}

TEST_CASE("a search with precision auto on A30s and RTX 6000s runs, each plan in its precision") {
  test::TempDir dir("fabtrain-precision");
  const Slice slice = mixed_slice(dir);
  SearchOptions options;
  options.space.precision = Precision::tf32;
  options.space.precision_where_supported = true;
  options.train_tokens = 1e8;
  options.workers = 1;
  const SearchResult r = search(load_model("gpt2-nano"), slice, options);
  REQUIRE_FALSE(r.ranked.empty());
  CHECK(r.failed.empty());
  const auto gpus = slice.gpus();
  bool saw_tf32 = false, saw_fp32 = false;
  for (const auto& e : r.ranked) {
    bool all_tf32 = true;
    for (int g : e.candidate.subset.gpus)
      all_tf32 = all_tf32 && has_precision(*gpus[g].type, Precision::tf32);
    CHECK(e.candidate.plan.precision == (all_tf32 ? Precision::tf32 : Precision::fp32));
    saw_tf32 = saw_tf32 || all_tf32;
    saw_fp32 = saw_fp32 || !all_tf32;
  }
  CHECK(saw_tf32);
  CHECK(saw_fp32);
}
