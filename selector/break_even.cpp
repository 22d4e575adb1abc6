#include "selector/break_even.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
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

std::vector<PairBreakEvens> break_evens(const ModelSpec& model, const Slice& slice,
                                        const SearchOptions& options) {
  std::vector<PairBreakEvens> out;
  const auto sites = slice.site_names();
  SearchOptions one = options;
  one.keep_top = 1;
  for (size_t i = 0; i < sites.size(); ++i)
    for (size_t j = i + 1; j < sites.size(); ++j) {
      PairBreakEvens p;
      p.site_a = sites[i], p.site_b = sites[j];
      p.rtt_ms = 1e3 * pair_rtt_s(slice, sites[i], sites[j]);
      std::map<double, std::string> winners;  // by round trip in ms
      auto winner_at = [&](double ms) -> const std::string& {
        auto it = winners.find(ms);
        if (it != winners.end()) return it->second;
        Slice what_if = slice;
        override_pair_latency(what_if, p.site_a, p.site_b, ms / 1e3);
        const SearchResult r = search(model, what_if, one);
        ++p.searches;
        return winners[ms] =
                   r.ranked.empty() ? "nothing fits" : winner_name(what_if, r.ranked.front());
      };
      p.winner = winner_at(p.rtt_ms);
      std::vector<double> grid;
      for (double ms = kLowestMs; ms <= kHighestMs * 1.0001; ms *= std::sqrt(10.0))
        grid.push_back(ms);
      for (double ms : grid) winner_at(ms);
      // Bisect every neighbouring pair of round trips with different winners.
      std::vector<std::pair<double, double>> open;
      for (auto it = winners.begin(); std::next(it) != winners.end(); ++it)
        if (it->second != std::next(it)->second) open.push_back({it->first, std::next(it)->first});
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
      p.sentence = sentence(p);
      out.push_back(std::move(p));
    }
  return out;
}

}  // namespace fabtrain
