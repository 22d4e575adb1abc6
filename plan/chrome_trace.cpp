// Timelines as Chrome traces (see chrome_trace.hpp).
#include "plan/chrome_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

#include "common/error.hpp"
#include "plan/instruction_info.hpp"

namespace fabtrain {
namespace {

using nlohmann::json;

json metadata(int rank, const std::vector<std::string>& labels) {
  json out = json::array();
  out.push_back({{"ph", "M"},
                 {"name", "process_name"},
                 {"pid", rank},
                 {"args", {{"name", fmt::format("rank {}", rank)}}}});
  out.push_back({{"ph", "M"},
                 {"name", "process_sort_index"},
                 {"pid", rank},
                 {"args", {{"sort_index", rank}}}});
  if (rank < int(labels.size()) && !labels[rank].empty())
    out.push_back({{"ph", "M"},
                   {"name", "process_labels"},
                   {"pid", rank},
                   {"args", {{"labels", labels[rank]}}}});
  for (int lane = 0; lane < kLaneCount; ++lane) {
    out.push_back({{"ph", "M"},
                   {"name", "thread_name"},
                   {"pid", rank},
                   {"tid", lane},
                   {"args", {{"name", lane_name(lane)}}}});
    out.push_back({{"ph", "M"},
                   {"name", "thread_sort_index"},
                   {"pid", rank},
                   {"tid", lane},
                   {"args", {{"sort_index", lane}}}});
  }
  return out;
}

json span(const Schedule& schedule, const TimelineEvent& e) {
  const Instruction& in = schedule.ranks[e.rank][e.instruction];
  const InstructionInfo info = describe(schedule, e.rank, in);
  json args = {{"step", e.step}, {"bytes", info.bytes}};
  if (info.flops > 0) args["flops"] = info.flops;
  if (info.mb >= 0) args["microbatch"] = info.mb;
  if (std::holds_alternative<Send>(in) || std::holds_alternative<Recv>(in))
    args["peer"] = info.peers.at(0);
  else if (const auto* c = std::get_if<Collective>(&in)) {
    args["peers"] = info.peers;
    args["purpose"] = to_string(c->purpose);
  }
  return {{"ph", "X"},
          {"name", to_string(in)},
          {"cat", info.kind},
          {"pid", e.rank},
          {"tid", e.lane},
          {"ts", e.start_s * 1e6},
          {"dur", (e.end_s - e.start_s) * 1e6},
          {"args", std::move(args)}};
}

// Flow arrows: the k-th send of (step, from, to, tensor) joins the k-th receive of it, as both
// players match messages (first in, first out per pair and tensor).
void add_flows(const Schedule& schedule, const std::vector<TimelineEvent>& events, json& out) {
  using Channel = std::tuple<int, int, int, int>;  // step, from, to, tensor
  std::map<Channel, std::deque<const TimelineEvent*>> sends, recvs;
  for (const TimelineEvent& e : events) {
    const Instruction& in = schedule.ranks[e.rank][e.instruction];
    if (const auto* s = std::get_if<Send>(&in))
      sends[{e.step, e.rank, s->peer, int(s->what)}].push_back(&e);
    else if (const auto* r = std::get_if<Recv>(&in))
      recvs[{e.step, r->peer, e.rank, int(r->what)}].push_back(&e);
  }
  auto stream_order = [](const TimelineEvent* a, const TimelineEvent* b) {
    return a->instruction < b->instruction;
  };
  int id = 0;
  for (auto& [channel, queue] : sends) {
    auto& matching = recvs[channel];
    std::sort(queue.begin(), queue.end(), stream_order);
    std::sort(matching.begin(), matching.end(), stream_order);
    for (std::size_t k = 0; k < queue.size() && k < matching.size(); ++k) {
      const TimelineEvent& s = *queue[k];
      const TimelineEvent& r = *matching[k];
      const std::string name = to_string(schedule.ranks[s.rank][s.instruction]);
      out.push_back({{"ph", "s"},
                     {"id", id},
                     {"name", name},
                     {"cat", "transfer"},
                     {"pid", s.rank},
                     {"tid", s.lane},
                     {"ts", s.start_s * 1e6}});
      // "e": bound to the receive's slice, at its middle (inside it however short).
      out.push_back({{"ph", "f"},
                     {"bp", "e"},
                     {"id", id},
                     {"name", name},
                     {"cat", "transfer"},
                     {"pid", r.rank},
                     {"tid", r.lane},
                     {"ts", (r.start_s + r.end_s) / 2 * 1e6}});
      ++id;
    }
  }
}

}  // namespace

json chrome_trace(const Schedule& schedule, const std::vector<TimelineEvent>& events,
                  const std::vector<std::string>& rank_labels) {
  for (const TimelineEvent& e : events)
    if (e.rank < 0 || e.rank >= int(schedule.ranks.size()) || e.instruction < 0 ||
        e.instruction >= int(schedule.ranks[e.rank].size()) || e.lane < 0 || e.lane >= kLaneCount)
      fail("timeline event of rank {} instruction {} lane {} is not in the schedule of {} ranks",
           e.rank, e.instruction, e.lane, schedule.ranks.size());
  json out = json::array();
  for (int r = 0; r < schedule.world; ++r)
    for (auto& m : metadata(r, rank_labels)) out.push_back(std::move(m));
  std::vector<TimelineEvent> sorted = events;
  std::sort(sorted.begin(), sorted.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
    return std::tie(a.step, a.rank, a.lane, a.start_s, a.instruction) <
           std::tie(b.step, b.rank, b.lane, b.start_s, b.instruction);
  });
  for (const TimelineEvent& e : sorted) out.push_back(span(schedule, e));
  add_flows(schedule, sorted, out);
  return {{"traceEvents", std::move(out)}, {"displayTimeUnit", "ms"}};
}

std::vector<TraceSpan> trace_spans(const json& trace, const std::string& file) {
  const json* events = trace.is_object() && trace.contains("traceEvents")
                           ? &trace.at("traceEvents")
                           : &trace;  // a bare array is a trace too
  if (!events->is_array()) fail("{}: not a Chrome trace (no traceEvents list)", file);
  std::vector<TraceSpan> spans;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const auto field = [&](const char* key) -> const json& {
      if (!e.contains(key)) fail("{}: traceEvents[{}] has no {}", file, i, key);
      return e.at(key);
    };
    if (!field("pid").is_number_integer() || !field("tid").is_number_integer() ||
        !field("cat").is_string() || !field("dur").is_number() || !(field("dur") >= 0))
      fail("{}: traceEvents[{}]: pid and tid must be integers, cat a verb, dur 0 or more", file, i);
    spans.push_back({e.at("pid").get<int>(), e.at("tid").get<int>(), e.at("cat").get<std::string>(),
                     e.at("dur").get<double>() / 1e6});
  }
  return spans;
}

}  // namespace fabtrain
