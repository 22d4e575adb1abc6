// Break-even round trips: per site pair of the slice, the round trips nearest to the pair's own at
// which the search's winner changes, one below it and one above, found by searching the pair's
// round trip alone (the other pairs keep theirs): a grid from 0.1 ms to 1 s walked away from the
// pair's round trip until the winner differs, then that step bisected (geometric) to within 5%.
// Changes further away are not searched: the user's question is how far the pair's round trip may
// move before the answer does. A winner is named by its technique family and where it runs
// ("pipeshard on 4 GPUs over UTAH+AMST", "ZeRO on 2 GPUs at one site"), so two equal sites are
// one winner.
#pragma once
#include <string>
#include <vector>

#include "selector/search.hpp"

namespace fabtrain {

struct BreakEven {
  double rtt_ms = 0;  // below it `below` wins, above it `above`
  std::string below, above;
};

struct PairBreakEvens {
  std::string site_a, site_b;
  double rtt_ms = 0;               // the slice's own round trip for the pair
  std::string winner;              // at rtt_ms
  std::vector<BreakEven> changes;  // the nearest below rtt_ms, then the nearest above; at most 2
  int searches = 0;
  std::string sentence;  // "pipeshard ... stays best above 7.1 ms; below it, ..."
};

// How much faster a plan may run at a longer round trip than at a shorter one, as a fraction: the
// sweep bounds a plan from below by its step at a shorter round trip, less this. Links only slow
// down as the round trip grows, but flows that then finish in another order can shorten a step a
// little; tests/selector checks the bound on every technique.
inline constexpr double kShorterRoundTripSlack = 0.02;

// The name a winner goes by in break-evens.
std::string winner_name(const Slice& slice, const Evaluated& e);

// Every site pair of the slice; none for a one-site slice.
std::vector<PairBreakEvens> break_evens(const ModelSpec& model, const Slice& slice,
                                        const SearchOptions& options);

}  // namespace fabtrain
