// A timeline as a Chrome trace (JSON, opened by Perfetto and chrome://tracing). One process per
// rank named "rank R" (labelled with its device), threads named by plan/timeline.hpp's lanes,
// one complete event per span: named by the schedule's line, `cat` the verb, `args` its step,
// microbatch, FLOPs, bytes and peer(s). Flow events join each send to the receive that takes its
// message (per step, per pair of ranks and tensor, first in first out as the players match them).
// Simulated and measured traces of one plan therefore share every process, thread and name.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/schedule.hpp"
#include "plan/timeline.hpp"

namespace fabtrain {

// rank_labels: one per rank ("GPU_A100 at UTAH", a host name), or empty.
nlohmann::json chrome_trace(const Schedule& schedule, const std::vector<TimelineEvent>& events,
                            const std::vector<std::string>& rank_labels = {});

// A trace's spans read back: each complete event's rank (pid), lane (tid), verb (cat) and
// seconds; metadata and flows are skipped. A span without those fields is an error naming `file`.
struct TraceSpan {
  int rank = 0, lane = 0;
  std::string verb;
  double seconds = 0;
};
std::vector<TraceSpan> trace_spans(const nlohmann::json& trace, const std::string& file);

}  // namespace fabtrain
