#include "selector/why_it_wins.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/human_units.hpp"

namespace fabtrain {

const char* to_string(Family family) {
  switch (family) {
    case Family::data_parallel:
      return "data parallel";
    case Family::zero:
      return "ZeRO";
    case Family::shard:
      return "shard";
    case Family::pipeshard:
      return "pipeshard";
  }
  return "data parallel";
}

Family family_of(const Plan& plan) {
  if (plan.pp > 1) return Family::pipeshard;
  if (plan.tp > 1) return Family::shard;
  if (plan.zero > 0) return Family::zero;
  return Family::data_parallel;
}

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

}  // namespace

WinnerExplanation explain_winner(const ModelSpec& model, const Slice& slice,
                                 const SearchOptions& options, const Evaluated& winner) {
  WinnerExplanation out;
  const Family mine = family_of(winner.candidate.plan);
  out.winner = fmt::format("{} wins: its {:.3f} s step is mostly {}; in all {}", to_string(mine),
                           winner.step_time_s, dominant_term(winner), split(winner));
  SearchOptions one = options;
  one.keep_top = 1;
  // Each rival's search gets a quarter of the budget (the three together less than the main one).
  one.compile_budget /= 4, one.simulate_budget /= 4;
  for (Family f : {Family::data_parallel, Family::zero, Family::shard, Family::pipeshard}) {
    if (f == mine) continue;
    one.only = [f](const Plan& plan) { return family_of(plan) == f; };
    Rival rival{f, std::nullopt, 0};
    const SearchResult r = search(model, slice, one);
    if (!r.ranked.empty()) {
      rival.best = r.ranked.front();
      rival.cost_ratio = cost(*rival.best, options.objective) / cost(winner, options.objective);
      out.lines.push_back(fmt::format(
          "best {} ({} on {}): {:.3f}x {}; its {:.3f} s step is mostly {}", to_string(f),
          to_short_string(rival.best->candidate.plan),
          counted(rival.best->candidate.plan.ranks(), "GPU"), rival.cost_ratio,
          measure(options.objective), rival.best->step_time_s, dominant_term(*rival.best)));
    } else {
      out.lines.push_back(fmt::format("{}: no plan fits ({} tried)", to_string(f), r.enumerated));
    }
    out.rivals.push_back(std::move(rival));
  }
  return out;
}

}  // namespace fabtrain
