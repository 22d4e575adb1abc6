#include "selector/rule_vs_search.hpp"

#include <fmt/format.h>

#include "selector/break_even.hpp"

namespace fabtrain {

std::string rule_vs_search(const Slice& slice, const RuleDecision& rule, const Evaluated& best,
                           int searched, Objective objective, double tolerance) {
  const std::string rule_name = winner_name(slice, rule.chosen);
  const std::string best_name = winner_name(slice, best);
  const double cost_rule =
      objective_weight(objective, rule.chosen.candidate.plan.ranks()) / rule.chosen.tokens_per_s;
  const double cost_best =
      objective_weight(objective, best.candidate.plan.ranks()) / best.tokens_per_s;
  const char* measure = objective == Objective::gpu_hours ? "GPU-hours" : "time to train";
  if (to_string(rule.chosen.candidate.plan) == to_string(best.candidate.plan))
    return fmt::format("The study's procedure and fabtrain's search agree: {} ({}).", rule_name,
                       to_short_string(best.candidate.plan));
  std::string why = fmt::format(
      "The study's procedure picks a technique from the topology first (one site: data parallel or "
      "shard; several sites: pipeshard with one stage per site; short of memory: ZeRO-2), each in "
      "the study's fixed forms, then takes one whole site's GPUs if they reach {:.0f}% of that "
      "pick's throughput; fabtrain's search ranks all {} plans (every mix of the techniques, "
      "microbatch count, ZeRO stage, schedule and GPU subset) by {}. ",
      100 * (1 - tolerance), searched, measure);
  if (rule_name == best_name)
    why += fmt::format(
        "Both choose {}, the search a better form of it ({} against {}): {:.3f}x the "
        "rule's {}.",
        best_name, to_short_string(best.candidate.plan),
        to_short_string(rule.chosen.candidate.plan), cost_best / cost_rule, measure);
  else
    why +=
        fmt::format("The rule ends at {} ({}), the search at {} ({}), with {:.3f}x the rule's {}.",
                    rule_name, to_short_string(rule.chosen.candidate.plan), best_name,
                    to_short_string(best.candidate.plan), cost_best / cost_rule, measure);
  return why;
}

}  // namespace fabtrain
