#include "selector/why_it_wins.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/human_units.hpp"

namespace fabtrain {

std::string dominant_term(const Evaluated& e) {
  const std::pair<double, const char*> terms[] = {{e.compute_s, "compute"},
                                                  {e.exposed_comm_s, "exposed communication"},
                                                  {e.bubble_s, "pipeline bubble"}};
  const auto& top = *std::max_element(std::begin(terms), std::end(terms),
                                      [](auto& a, auto& b) { return a.first < b.first; });
  const double share = e.step_time_s > 0 ? 100 * top.first / e.step_time_s : 0;
  return fmt::format("{} {:.2f} s ({:.0f}%)", top.second, top.first, share);
}

namespace {

double cost(const Evaluated& e, Objective objective) {
  return objective_weight(objective, e.candidate.plan.ranks()) / e.tokens_per_s;
}

std::string split(const Evaluated& e) {
  return fmt::format(
      "compute {:.2f} s, exposed communication {:.2f} s (of {:.2f} s in flight), bubble {:.2f} s",
      e.compute_s, e.exposed_comm_s, e.communication_s, e.bubble_s);
}

const char* measure(Objective objective) {
  switch (objective) {
    case Objective::gpu_hours:
      return "the GPU-hours";
    case Objective::tokens_per_s:
      return "the time per token";
    case Objective::time_to_train:
      break;
  }
  return "the time to train";
}

// A family with no plan ranked: none fits, or the budget ended before one was simulated.
std::string no_plan_line(Family f, const SearchResult& result) {
  const int tried = result.enumerated_by_family[std::size_t(f)];
  if (tried == 0) return fmt::format("{}: no plan in the space", to_string(f));
  if (result.budget_spent)
    return fmt::format("{}: none of its {} simulated within the search's budget", to_string(f),
                       counted(tried, "plan"));
  return fmt::format("{}: no plan fits ({} tried)", to_string(f), tried);
}

// A plan on one GPU is named as a single GPU, not by the family its degrees fall in.
std::string technique_of(const Evaluated& e) {
  return e.candidate.plan.ranks() == 1 ? "single GPU" : to_string(family_of(e.candidate.plan));
}

}  // namespace

WinnerExplanation explain_winner(const SearchResult& result, const SearchOptions& options) {
  WinnerExplanation out;
  const Evaluated& winner = result.ranked.front();
  const Family mine = family_of(winner.candidate.plan);
  const bool single = winner.candidate.plan.ranks() == 1;
  out.winner =
      fmt::format("{} wins: its {:.3f} s step is mostly {}; in all {}", technique_of(winner),
                  winner.step_time_s, dominant_term(winner), split(winner));
  for (Family f : kFamilies) {
    if (f == mine && !single) continue;
    // Against a single GPU, its own family's rival is that family's best on several GPUs.
    const auto rivals = [&](const Evaluated& e) {
      return family_of(e.candidate.plan) == f && (f != mine || e.candidate.plan.ranks() > 1);
    };
    Rival rival{f, std::nullopt, 0};
    const auto best = std::find_if(result.ranked.begin(), result.ranked.end(), rivals);
    if (best != result.ranked.end()) {
      rival.best = *best;
      rival.cost_ratio = cost(*rival.best, options.objective) / cost(winner, options.objective);
      out.lines.push_back(fmt::format(
          "best {} ({} on {}): {:.3f}x {}; its {:.3f} s step is mostly {}", technique_of(*best),
          to_short_string(rival.best->candidate.plan),
          counted(rival.best->candidate.plan.ranks(), "GPU"), rival.cost_ratio,
          measure(options.objective), rival.best->step_time_s, dominant_term(*rival.best)));
    } else if (f == mine) {
      continue;  // the single GPU is its family's only plan that fits
    } else {
      out.lines.push_back(no_plan_line(f, result));
    }
    out.rivals.push_back(std::move(rival));
  }
  return out;
}

}  // namespace fabtrain
