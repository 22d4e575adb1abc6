// Whether the simulator ranks plans as the measurements do: rows of
// calibrate/data/published_runs.yaml that share a `compare` group ran several plans of one job on
// the same hardware; the plan predicted fastest should be the one measured fastest. Speed is
// sequences per second (global batch / step time), so a group may mix GPU counts; a plan predicted
// not to fit its GPUs is never the predicted best.
#pragma once
#include <string>
#include <vector>

#include "calibrate/check_published.hpp"

namespace fabtrain {

struct PlanComparison {
  std::string group;
  std::vector<std::string> ids;  // the group's simulated rows, in file order
  std::string best_measured, best_predicted;
  bool agree() const { return best_measured == best_predicted; }
};

// One comparison per group with at least two simulated rows, in order of first appearance.
// runs and checks are parallel (as in PublishedSummary).
std::vector<PlanComparison> compare_plans(const std::vector<PublishedRun>& runs,
                                          const std::vector<PublishedCheck>& checks);
// How many of them agree.
int agreeing(const std::vector<PlanComparison>& comparisons);

}  // namespace fabtrain
