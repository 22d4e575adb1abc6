// The study's procedure next to fabtrain's answer: one sentence saying whether they agree and,
// when they do not, why (what each considers and how it decides).
#pragma once
#include <string>

#include "selector/search.hpp"
#include "selector/study_rule.hpp"

namespace fabtrain {

// searched: how many plans the search considered; best: its winner under `objective`.
std::string rule_vs_search(const Slice& slice, const RuleDecision& rule, const Evaluated& best,
                           int searched, Objective objective, double rule_tolerance = 0.10);

}  // namespace fabtrain
