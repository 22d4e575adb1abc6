#include "selector/break_even.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "selector/why_it_wins.hpp"

namespace fabtrain {

std::string winner_name(const Slice& slice, const Evaluated& e) {
  const auto all = slice.gpus();
  std::set<std::string> seen;
  std::string sites;
  for (int g : e.candidate.subset.gpus) {
    const std::string& site = slice.vms[all[g].vm].site;
    if (seen.insert(site).second) sites += (sites.empty() ? "" : "+") + site;
  }
  const int n = e.candidate.plan.ranks();
  return fmt::format("{} on {} GPU{} {}", to_string(family_of(e.candidate.plan)), n,
                     n == 1 ? "" : "s", seen.size() == 1 ? "at one site" : "over " + sites);
}

namespace {

// site_of: the site of every GPU of the slice.
bool uses_site(const std::vector<std::string>& site_of, const Plan& plan, const std::string& site) {
  for (int r = 0; r < plan.ranks(); ++r)
    if (site_of[device_of(plan, r)] == site) return true;
  return false;
}

// As the search ranks: a tight plan's cost raised by the tolerance (search.hpp).
double cost_of(const Evaluated& e, const SearchOptions& options) {
  return ranking_cost(
      e, objective_weight(options.objective, e.candidate.plan.ranks()) / e.tokens_per_s, options);
}

constexpr double kLowestMs = 0.1, kHighestMs = 1000, kPrecision = 1.05;

std::string sentence(const PairBreakEvens& p) {
  const std::string pair = p.site_a + "-" + p.site_b;
  if (p.changes.empty())
    return fmt::format(
        "{}: {} stays best at every round trip from {} ms to {:.0f} ms (now {:.3g} ms)", pair,
        p.winner, kLowestMs, kHighestMs, p.rtt_ms);
  // The nearest change below the slice's round trip and the nearest above it.
  const BreakEven* below = nullptr;
  const BreakEven* above = nullptr;
  for (const auto& c : p.changes) {
    if (c.rtt_ms <= p.rtt_ms) below = &c;
    if (c.rtt_ms > p.rtt_ms && !above) above = &c;
  }
  std::string out = fmt::format("{} at {:.3g} ms: {}", pair, p.rtt_ms, p.winner);
  if (below && above)
    out += fmt::format(" stays best from {:.3g} to {:.3g} ms; below, {}; above, {}", below->rtt_ms,
                       above->rtt_ms, below->below, above->above);
  else if (below)
    out += fmt::format(" stays best above {:.3g} ms; below it, {}", below->rtt_ms, below->below);
  else
    out += fmt::format(" stays best below {:.3g} ms; above it, {}", above->rtt_ms, above->above);
  return out;
}

}  // namespace

// One site pair's round trips swept: the winner at each round trip tried. Plans that do not span
// the pair take the same time at every round trip, so their best is searched once; at each round
// trip only the spanning plans are searched, and only those whose bound beats the best known.
// Two things bound a spanning plan at a round trip from what was simulated at others: its step at
// the nearest shorter one, less kShorterRoundTripSlack, from below (links only slow down as the
// round trip grows; the slack covers flows that reorder), and the winner at the nearest longer
// one, re-simulated here, from above.
class PairSweep {
 public:
  PairSweep(const ModelSpec& model, const Slice& slice, const SearchOptions& one,
            const std::vector<std::string>& site_of, PlanMemo& compiled, std::string a,
            std::string b)
      : model_(model), slice_(slice), site_of_(site_of), a_(std::move(a)), b_(std::move(b)) {
    SearchOptions fixed = one;
    fixed.only = [this](const Plan& plan) { return !spans(plan); };
    const SearchResult apart = search(model, slice, fixed);
    if (!apart.ranked.empty()) apart_ = apart.ranked.front();
    spanning_ = one;
    spanning_.memo = nullptr;  // each round trip has its own (memo_at)
    spanning_.keep_bound_inputs = true;
    spanning_.only = [this](const Plan& plan) { return spans(plan); };
    spanning_.compiled = &compiled;  // the pair's round trip changes every spanning plan's time,
                                     // but not what it is, nor its memory
  }

  int searches() const { return searches_; }

  const std::string& winner_at(double ms) {
    auto it = winners_.find(ms);
    if (it != winners_.end()) return it->second;
    Slice what_if = slice_;
    override_pair_latency(what_if, a_, b_, ms / 1e3);
    SimMemo& memo = memo_at(ms);
    memo.floors = floors_below(ms);
    SearchOptions options = spanning_;
    options.memo = &memo;
    std::optional<Evaluated> best = apart_;
    auto consider = [&](const Evaluated& e) {
      if (!best || cost_of(e, spanning_) < cost_of(*best, spanning_)) best = e;
    };
    if (const Evaluated* longer = best_at_longer(ms)) {
      const SearchResult again = evaluate(model_, what_if, {longer->candidate}, options);
      if (!again.ranked.empty()) consider(again.ranked.front());
    }
    if (best) {
      options.must_beat = cost_of(*best, spanning_);
      options.must_beat_answer = winner_name(what_if, *best);
    }
    options.answer_of = [&what_if](const Candidate& c) {
      Evaluated e;
      e.candidate = c;
      return winner_name(what_if, e);
    };
    const SearchResult r = search(model_, what_if, options);
    ++searches_;
    for (const auto& [key, outcome] : memo.outcomes)
      if (outcome.ok) simulated_[key][ms] = outcome.step_time_s;
    for (const auto& e : r.ranked)
      seen_[memo_key(e.candidate.plan, e.candidate.global_batch)][ms] = e;
    if (!r.ranked.empty()) consider(r.ranked.front());
    if (best) best_[ms] = *best;
    return winners_[ms] = best ? winner_name(what_if, *best) : "nothing fits";
  }

  // Where the winners at `near` and at `far` (both searched) cost the same, were each cost linear
  // in the round trip between them: each is simulated at the other's round trip. None when either
  // end has no winner or the costs do not cross.
  std::optional<double> crossing(double near, double far) {
    const auto a = best_.find(near), b = best_.find(far);
    if (a == best_.end() || b == best_.end()) return std::nullopt;
    const std::optional<double> a_far = cost_at(a->second, far), b_near = cost_at(b->second, near);
    if (!a_far || !b_near) return std::nullopt;
    const double gap_near = *b_near - cost_of(a->second, spanning_);
    const double gap_far = cost_of(b->second, spanning_) - *a_far;
    if (gap_near <= gap_far) return std::nullopt;
    return near + gap_near * (far - near) / (gap_near - gap_far);
  }

 private:
  bool spans(const Plan& plan) const {
    return uses_site(site_of_, plan, a_) && uses_site(site_of_, plan, b_);
  }

  // What a plan costs at a round trip (the same at every one when it does not span the pair).
  std::optional<double> cost_at(const Evaluated& e, double ms) {
    if (!spans(e.candidate.plan)) return cost_of(e, spanning_);
    Slice what_if = slice_;
    override_pair_latency(what_if, a_, b_, ms / 1e3);
    SearchOptions options = spanning_;
    options.memo = &memo_at(ms);
    const SearchResult r = evaluate(model_, what_if, {e.candidate}, options);
    if (r.ranked.empty()) return std::nullopt;
    return cost_of(r.ranked.front(), spanning_);
  }

  // What was simulated and bounded at a round trip, shared by its search and the crossings' checks.
  SimMemo& memo_at(double ms) { return memos_[ms]; }

  // Each plan simulated at a shorter round trip: its step at the nearest one, less the slack.
  std::map<std::string, double> floors_below(double ms) const {
    std::map<std::string, double> floors;
    for (const auto& [key, by_ms] : simulated_) {
      const auto above = by_ms.lower_bound(ms);
      if (above != by_ms.begin())
        floors[key] = std::prev(above)->second * (1 - kShorterRoundTripSlack);
    }
    return floors;
  }

  // Of the plans simulated at longer round trips, the one of least cost at the nearest longer
  // one (what it costs here is no more).
  const Evaluated* best_at_longer(double ms) const {
    const Evaluated* best = nullptr;
    for (const auto& [key, by_ms] : seen_) {
      const auto at = by_ms.lower_bound(ms);
      if (at == by_ms.end()) continue;
      if (!best || cost_of(at->second, spanning_) < cost_of(*best, spanning_)) best = &at->second;
    }
    return best;
  }

  const ModelSpec& model_;
  const Slice& slice_;
  const std::vector<std::string>& site_of_;
  std::string a_, b_;
  SearchOptions spanning_;
  std::optional<Evaluated> apart_;
  std::map<double, SimMemo> memos_;                            // by round trip in ms
  std::map<double, std::string> winners_;                      // by round trip in ms
  std::map<double, Evaluated> best_;                           // the winners, by round trip
  std::map<std::string, std::map<double, Evaluated>> seen_;    // spanning plans kept, by ms
  std::map<std::string, std::map<double, double>> simulated_;  // every step simulated, by ms
  int searches_ = 0;
};

namespace {

// Tries the round trips just either side of a guessed change (kPrecision apart, those strictly
// inside the step): where the guess holds, the change lies between them; else the step is
// narrowed. False when neither is inside.
bool try_guess(PairSweep& sweep, const std::string& here, double guess, double& near, double& far) {
  const double half = std::sqrt(kPrecision);
  const double towards_near = near < far ? guess / half : guess * half;
  const double towards_far = near < far ? guess * half : guess / half;
  auto inside = [&](double ms) { return std::min(near, far) < ms && ms < std::max(near, far); };
  const bool near_inside = inside(towards_near), far_inside = inside(towards_far);
  if (near_inside) {
    if (sweep.winner_at(towards_near) != here) {
      far = towards_near;
      return true;
    }
    near = towards_near;
  }
  if (far_inside) (sweep.winner_at(towards_far) == here ? near : far) = towards_far;
  return near_inside || far_inside;
}

// The nearest change from the slice's round trip `from` towards the round trips `away` (in order
// of distance): the first whose winner differs; then the step to it narrowed around where the two
// winners' costs would cross were they linear in the round trip (at most kGuesses times), and
// bisected (geometric) to within kPrecision. Winners further away are not searched.
std::optional<BreakEven> nearest_change(PairSweep& sweep, double from,
                                        const std::vector<double>& away) {
  constexpr int kGuesses = 3;
  const std::string here = sweep.winner_at(from);
  double near = from;
  for (double far : away) {
    if (sweep.winner_at(far) == here) {
      near = far;
      continue;
    }
    for (int guesses = 0; std::max(near, far) / std::min(near, far) > kPrecision * 1.000001;) {
      const std::optional<double> guess =
          guesses++ < kGuesses ? sweep.crossing(near, far) : std::nullopt;
      if (guess && try_guess(sweep, here, *guess, near, far)) continue;
      const double mid = std::sqrt(near * far);
      (sweep.winner_at(mid) == here ? near : far) = mid;
    }
    const std::string& other = sweep.winner_at(far);
    const double at = std::sqrt(near * far);
    return far > near ? BreakEven{at, here, other} : BreakEven{at, other, here};
  }
  return std::nullopt;
}

}  // namespace

std::vector<PairBreakEvens> break_evens(const ModelSpec& model, const Slice& slice,
                                        const SearchOptions& options) {
  std::vector<PairBreakEvens> out;
  const auto sites = slice.site_names();
  SearchOptions one = options;
  one.keep_top = 1;
  one.best_of_each_family = false;  // only the winner's answer matters here
  // The pairs' what-ifs share compiled plans (the same hardware), the caller's if it has them.
  PlanMemo own_compiled;
  PlanMemo& compiled = options.compiled ? *options.compiled : own_compiled;
  std::vector<std::string> site_of;
  for (const auto& g : slice.gpus()) site_of.push_back(slice.vms[g.vm].site);
  for (size_t i = 0; i < sites.size(); ++i)
    for (size_t j = i + 1; j < sites.size(); ++j) {
      PairBreakEvens p;
      p.site_a = sites[i], p.site_b = sites[j];
      p.rtt_ms = 1e3 * pair_rtt_s(slice, sites[i], sites[j]);
      PairSweep sweep(model, slice, one, site_of, compiled, p.site_a, p.site_b);
      p.winner = sweep.winner_at(p.rtt_ms);
      // The grid, 0.1 ms to 1 s in steps of sqrt(10), less the points near the slice's own.
      std::vector<double> shorter, longer;
      for (double ms = kLowestMs; ms <= kHighestMs * 1.0001; ms *= std::sqrt(10.0)) {
        if (ms * kPrecision < p.rtt_ms) shorter.insert(shorter.begin(), ms);
        if (ms > p.rtt_ms * kPrecision) longer.push_back(ms);
      }
      if (auto below = nearest_change(sweep, p.rtt_ms, shorter)) p.changes.push_back(*below);
      if (auto above = nearest_change(sweep, p.rtt_ms, longer)) p.changes.push_back(*above);
      p.searches = sweep.searches();
      p.sentence = sentence(p);
      out.push_back(std::move(p));
    }
  return out;
}

}  // namespace fabtrain
