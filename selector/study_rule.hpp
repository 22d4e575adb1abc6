// The study's selection procedure as the paper describes it (../shared/reference/
// fabric-and-paper.md), so users can see where the search agrees and where it finds better. On
// all of the slice's GPUs, its techniques (study_techniques: dp=n, ZeRO-2, tp=n and pipeshard,
// each over a few microbatch counts) are all simulated, then:
//   one site                  -> data parallel or shard, whichever fits and is faster;
//   across sites              -> pipeshard (one stage per site; shard inside when the heads
//                                allow, else data parallel inside);
//   none of those fits        -> ZeRO-2;
//   across sites, a whole site's GPUs alone instead when the same techniques there reach the
//   chosen plan's throughput within the tolerance (fewer GPUs).
// The paper gives no thresholds; the tolerance is ours and a parameter.
// Not here: the search over every plan (search.hpp), the study's figures (study_report.hpp).
#pragma once
#include <string>
#include <vector>

#include "selector/search.hpp"

namespace fabtrain {

struct RuleDecision {
  Evaluated chosen;                // chosen.candidate.plan is the rule's plan
  std::string technique;           // the study's technique name
  std::vector<std::string> steps;  // the reasoning, one line per rule applied
  bool found = false;
};

// The study's four techniques on a set of GPUs: dp=n; dp=n,zero=2; tp=n (when the heads allow);
// pipeshard with one stage per site (or two stages on one site), shard inside, 1F1B.
std::vector<Candidate> study_techniques(const ModelSpec& model, const Slice& slice,
                                        const GpuSubset& subset, const SearchSpace& space);

// Options that simulate every plan (each technique needs its own best, not only the winner).
inline SearchOptions every_plan(SearchOptions options) {
  options.exhaustive = true;
  return options;
}

RuleDecision study_rule(const ModelSpec& model, const Slice& slice, const SearchOptions& options,
                        double fewer_gpus_tolerance = 0.10);

}  // namespace fabtrain
