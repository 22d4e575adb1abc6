// Break-even round trips: per site pair of the slice, the round trip at which the search's winner
// changes, found by searching the pair's round trip alone (the other pairs keep theirs): a grid
// from 0.1 ms to 1 s, then bisection (geometric) of every interval whose ends have different
// winners, to within 5% (a third winner met in between splits the interval in two, each
// bisected: overlap can open narrow windows, e.g. ZeRO between data parallel and pipeshard). A
// winner is named by its technique family and where it runs ("pipeshard on 4 GPUs over UTAH+AMST",
// "ZeRO on 2 GPUs at one site"), so two equal sites are one winner.
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
  std::vector<BreakEven> changes;  // in increasing round trip
  int searches = 0;
  std::string sentence;  // "pipeshard ... stays best above 7.1 ms; below it, ..."
};

// The name a winner goes by in break-evens.
std::string winner_name(const Slice& slice, const Evaluated& e);

// Every site pair of the slice; none for a one-site slice.
std::vector<PairBreakEvens> break_evens(const ModelSpec& model, const Slice& slice,
                                        const SearchOptions& options);

}  // namespace fabtrain
