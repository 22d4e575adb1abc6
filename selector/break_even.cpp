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
// trip only the spanning plans are searched, and only those whose bound beats it. A plan's time
// never falls as a round trip grows (the simulator's links only slow down: tested), so a spanning
// plan simulated at a shorter round trip bounds it from below, and one simulated at a longer
// round trip gives the winner to beat.
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
    spanning_.only = [this](const Plan& plan) { return spans(plan); };
    spanning_.memo = nullptr;        // the pair's round trip changes every spanning plan's time...
    spanning_.compiled = &compiled;  // ...but not what it is, nor its memory
  }

  int searches() const { return searches_; }

  const std::string& winner_at(double ms) {
    auto it = winners_.find(ms);
    if (it != winners_.end()) return it->second;
    Slice what_if = slice_;
    override_pair_latency(what_if, a_, b_, ms / 1e3);
    SearchOptions options = spanning_;
    std::optional<Evaluated> best = apart_;
    auto consider = [&](const Evaluated& e) {
      if (!best || cost_of(e, spanning_) < cost_of(*best, spanning_)) best = e;
    };
    if (const Evaluated* longer = best_at_longer(ms)) {
      const SearchResult again = evaluate(model_, what_if, {longer->candidate}, options);
      if (!again.ranked.empty()) consider(again.ranked.front());
    }
    if (best) options.must_beat = cost_of(*best, spanning_);
    const SearchResult r = search(model_, what_if, options);
    ++searches_;
    for (const auto& e : r.ranked)
      seen_[memo_key(e.candidate.plan, e.candidate.global_batch)][ms] = e;
    if (!r.ranked.empty()) consider(r.ranked.front());
    return winners_[ms] = best ? winner_name(what_if, *best) : "nothing fits";
  }

 private:
  bool spans(const Plan& plan) const {
    return uses_site(site_of_, plan, a_) && uses_site(site_of_, plan, b_);
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
  std::map<double, std::string> winners_;                    // by round trip in ms
  std::map<std::string, std::map<double, Evaluated>> seen_;  // spanning plans, by ms
  int searches_ = 0;
};

std::vector<PairBreakEvens> break_evens(const ModelSpec& model, const Slice& slice,
                                        const SearchOptions& options) {
  std::vector<PairBreakEvens> out;
  const auto sites = slice.site_names();
  SearchOptions one = options;
  one.keep_top = 1;
  PlanMemo compiled;  // the pairs' what-ifs share compiled plans (the same hardware)
  std::vector<std::string> site_of;
  for (const auto& g : slice.gpus()) site_of.push_back(slice.vms[g.vm].site);
  for (size_t i = 0; i < sites.size(); ++i)
    for (size_t j = i + 1; j < sites.size(); ++j) {
      PairBreakEvens p;
      p.site_a = sites[i], p.site_b = sites[j];
      p.rtt_ms = 1e3 * pair_rtt_s(slice, sites[i], sites[j]);
      PairSweep sweep(model, slice, one, site_of, compiled, p.site_a, p.site_b);
      auto winner_at = [&](double ms) -> const std::string& { return sweep.winner_at(ms); };
      p.winner = winner_at(p.rtt_ms);
      std::vector<double> grid;
      for (double ms = kLowestMs; ms <= kHighestMs * 1.0001; ms *= std::sqrt(10.0))
        grid.push_back(ms);
      for (double ms : grid) winner_at(ms);
      grid.push_back(p.rtt_ms);
      std::sort(grid.begin(), grid.end());
      // Bisect every neighbouring pair of round trips with different winners.
      std::vector<std::pair<double, double>> open;
      for (std::size_t k = 0; k + 1 < grid.size(); ++k)
        if (winner_at(grid[k]) != winner_at(grid[k + 1])) open.push_back({grid[k], grid[k + 1]});
      // A third winner in between splits the interval in two, each bisected in turn.
      std::map<double, BreakEven> changes;  // by round trip
      while (!open.empty()) {
        auto [lo, hi] = open.back();
        open.pop_back();
        const std::string low = winner_at(lo), high = winner_at(hi);
        bool split = false;
        while (hi / lo > kPrecision) {
          const double mid = std::sqrt(lo * hi);
          const std::string& w = winner_at(mid);
          if (w == low) {
            lo = mid;
          } else if (w == high) {
            hi = mid;
          } else {
            open.push_back({lo, mid});
            open.push_back({mid, hi});
            split = true;
            break;
          }
        }
        if (!split) changes[std::sqrt(lo * hi)] = {std::sqrt(lo * hi), low, high};
      }
      for (const auto& [ms, change] : changes) p.changes.push_back(change);
      p.searches = sweep.searches();
      p.sentence = sentence(p);
      out.push_back(std::move(p));
    }
  return out;
}

}  // namespace fabtrain
