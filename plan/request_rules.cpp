// Checking one stream's requests (see request_rules.hpp).
#include "plan/request_rules.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "common/error.hpp"
#include "plan/verb.hpp"

namespace fabtrain {
namespace {

Awaits awaits(const Instruction& in) {
  if (std::holds_alternative<Send>(in)) return Awaits::send;
  if (std::holds_alternative<Recv>(in)) return Awaits::recv;
  return Awaits::collective;
}

// A collective the next instruction needs the result of cannot run in the background.
bool needed_at_once(const Instruction& in) {
  const auto* c = std::get_if<Collective>(&in);
  return c && (c->purpose == Purpose::tp_forward || c->purpose == Purpose::tp_backward ||
               c->purpose == Purpose::tied_embedding || c->purpose == Purpose::grad_norm ||
               c->purpose == Purpose::pipeline_gather);
}

}  // namespace

std::optional<RequestError> request_error(const std::vector<Instruction>& stream) {
  std::map<int, std::size_t> pending;  // request -> its start's position
  std::set<int> used;                  // requests started this step
  for (std::size_t pc = 0; pc < stream.size(); ++pc) {
    const Instruction& in = stream[pc];
    if (const auto* w = std::get_if<Wait>(&in)) {
      const auto it = pending.find(w->request);
      if (it == pending.end())
        return RequestError{pc,
                            used.count(w->request)
                                ? fmt::format("request {} already waited", w->request)
                                : fmt::format("wait without a start of request {}", w->request)};
      if (awaits(stream[it->second]) != w->what)
        return RequestError{pc, fmt::format("request {} started as '{}'", w->request,
                                            to_string(stream[it->second]))};
      pending.erase(it);
      continue;
    }
    const int request = request_of(in);
    if (request < 0) continue;
    if (needed_at_once(in))
      return RequestError{pc, fmt::format("request {}: this collective cannot be non-blocking (the "
                                          "next instruction needs its result)",
                                          request)};
    if (!used.insert(request).second)
      return RequestError{
          pc, fmt::format("request {} reused (requests are unique within a step)", request)};
    pending[request] = pc;
  }
  if (!pending.empty()) {
    const auto& [request, pc] = *pending.begin();
    return RequestError{pc, fmt::format("request {} started, never waited", request)};
  }
  return std::nullopt;
}

void check_requests(const std::vector<Instruction>& stream, int rank) {
  if (const auto e = request_error(stream))
    fail("rank {} at #{} '{}': {}", rank, e->at, to_string(stream[e->at]), e->why);
}

}  // namespace fabtrain
