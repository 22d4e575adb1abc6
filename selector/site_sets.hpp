// Which sets of sites the search tries, and what it can say of the sets it leaves out.
// - Symmetry: sites are interchangeable (one class) when their VMs are the same (GPU type and
//   count, NIC, interconnect, shared hosts, in order) and every other site is as far from each
//   (the same network kind, round trips within kRttToleranceS, equal bandwidth). A plan on one
//   member is the plan on any other, so a set takes the first c members of each class.
// - Exact up to kExactSiteSets sets (every combination of class counts): every slice of up to
//   about nine distinct sites.
// - Beyond, a stated family: every set that leaves out at most `drop` sites (drop as large as the
//   budget allows; the sets with the most GPUs, where time to train is won), every single site
//   and pair, and for each site the sets grown from it by the nearest next site (by round trip:
//   compact clusters, where GPU-hours are won). The family's `left_out_floor` bounds every set
//   outside it from below, so the search can print how much better one of them could be.
// Not here: GPU subsets of a set (enumerate.hpp), bounds of plans (sim/lower_bound.hpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "platforms/slice.hpp"

namespace fabtrain {

// Round trips that differ by no more than this are the same for symmetry: about the spread of a
// measured round trip between two FABRIC sites over minutes (an assumption, not a measurement).
inline constexpr double kRttToleranceS = 0.5e-3;
inline constexpr int kExactSiteSets = 512;

struct SiteClass {
  std::vector<std::string> sites;  // interchangeable, in slice order; the first represents them
};

std::vector<SiteClass> site_classes(const Slice& slice);

struct SiteSets {
  std::vector<std::vector<std::string>> sets;  // each in slice order
  bool exact = true;                           // every set of sites is tried (up to symmetry)
  int drop = 0;  // beyond exact: every set leaving out at most `drop` sites is tried
  // Beyond exact: the least `floor` of any set outside the family (seconds per token in the
  // objective's terms, as the caller's floor function gives them); 0 when exact.
  double left_out_floor = 0;
};

// floor(set): a lower bound of any plan's cost on every GPU subset of the set (used beyond exact
// only; none: the inverse of the set's FP32 peak); weight_by_gpus: whether that cost grows with
// the GPU count (GPU-hours).
using SetFloor = std::function<double(const std::vector<std::string>& sites)>;
SiteSets site_sets(const Slice& slice, const SetFloor& floor, bool weight_by_gpus);

}  // namespace fabtrain
