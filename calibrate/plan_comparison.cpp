#include "calibrate/plan_comparison.hpp"

#include <map>

namespace fabtrain {

std::vector<PlanComparison> compare_plans(const std::vector<PublishedRun>& runs,
                                          const std::vector<PublishedCheck>& checks) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < runs.size() && i < checks.size(); ++i) {
    if (runs[i].compare.empty()) continue;
    if (!members.count(runs[i].compare)) order.push_back(runs[i].compare);
    members[runs[i].compare].push_back(i);
  }
  std::vector<PlanComparison> out;
  for (const std::string& group : order) {
    const std::vector<std::size_t>& rows = members[group];
    if (rows.size() < 2) continue;
    PlanComparison c{group, {}, "", ""};
    double best_measured = 0, best_predicted = 0;
    for (const std::size_t i : rows) {
      c.ids.push_back(runs[i].id);
      const double measured = runs[i].global_batch / checks[i].measured_step_s;
      const double predicted = checks[i].oom || !(checks[i].predicted_step_s > 0)
                                   ? 0
                                   : runs[i].global_batch / checks[i].predicted_step_s;
      if (measured > best_measured) best_measured = measured, c.best_measured = runs[i].id;
      if (predicted > best_predicted) best_predicted = predicted, c.best_predicted = runs[i].id;
    }
    out.push_back(c);
  }
  return out;
}

int agreeing(const std::vector<PlanComparison>& comparisons) {
  int n = 0;
  for (const PlanComparison& c : comparisons) n += c.agree();
  return n;
}

}  // namespace fabtrain
