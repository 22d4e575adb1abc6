// A Schedule as diffable text (one line per instruction, "rank R: fwd mb=0 blocks=0:5 ...") and
// as JSON for programs. Numbers print with 6 significant digits so golden files stay readable
// and still show any change of a cost model. Not here: building the schedule (compile.cpp).
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <type_traits>

#include "common/error.hpp"
#include "plan/schedule.hpp"
#include "plan/verb.hpp"

namespace fabtrain {
namespace {

template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
// clang 14 does not yet deduce aggregate template arguments (P1816): the guide says how.
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

std::string optional_fields(int mb, int block) {
  std::string out;
  if (mb >= 0) out += fmt::format(" mb={}", mb);
  if (block >= 0) out += fmt::format(" block={}", block);
  return out;
}

// " req=N" on a start, nothing on a blocking instruction.
std::string request_field(int request) {
  return request >= 0 ? fmt::format(" req={}", request) : std::string();
}

// A bucket's " blocks=b:e", nothing for the whole stage.
std::string bucket_field(int begin, int end) {
  return begin >= 0 ? fmt::format(" blocks={}:{}", begin, end) : std::string();
}

}  // namespace

const char* to_string(Purpose p) {
  switch (p) {
    case Purpose::tp_forward:
      return "tp_forward";
    case Purpose::tp_backward:
      return "tp_backward";
    case Purpose::dp_gradients:
      return "dp_gradients";
    case Purpose::zero_gradients:
      return "zero_gradients";
    case Purpose::zero_parameters:
      return "zero_parameters";
    case Purpose::tied_embedding:
      return "tied_embedding";
    case Purpose::grad_norm:
      return "grad_norm";
    case Purpose::pipeline_gather:
      return "pipeline_gather";
  }
  return "?";
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return "all_reduce";
    case CollectiveOp::reduce_scatter:
      return "reduce_scatter";
    case CollectiveOp::all_gather:
      return "all_gather";
  }
  return "?";
}

const char* to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::tp:
      return "tp";
    case GroupKind::dp:
      return "dp";
    case GroupKind::tied_embedding:
      return "tied_embedding";
    case GroupKind::world:
      return "world";
  }
  return "?";
}

const char* to_string(Tensor t) { return t == Tensor::activation ? "act" : "grad"; }

const char* to_string(Awaits a) {
  switch (a) {
    case Awaits::collective:
      return "collective";
    case Awaits::send:
      return "send";
    case Awaits::recv:
      return "recv";
  }
  return "?";
}

std::string to_string(const Instruction& instruction) {
  return verb(instruction) +
         std::visit(
             overloaded{
                 [](const LoadMicrobatch& i) {
                   return fmt::format(" mb={} sequences={} tokens={}", i.mb, i.sequences, i.tokens);
                 },
                 [](const Forward& i) {
                   std::string s =
                       fmt::format(" mb={} blocks={}:{} flops={:.6g} bytes={:.6g} act={:.6g}", i.mb,
                                   i.begin, i.end, i.flops, i.bytes, i.activation_bytes);
                   if (i.replicas != 1) s += fmt::format(" replicas={}", i.replicas);
                   return s;
                 },
                 [](const Backward& i) {
                   std::string s =
                       fmt::format(" mb={} blocks={}:{} flops={:.6g} bytes={:.6g} act={:.6g}", i.mb,
                                   i.begin, i.end, i.flops, i.bytes, i.activation_bytes);
                   if (i.recompute) s += " recompute";
                   if (i.replicas != 1) s += fmt::format(" replicas={}", i.replicas);
                   return s;
                 },
                 [](const Send& i) {
                   return fmt::format(" {} mb={} to={} bytes={:.6g}{}", to_string(i.what), i.mb,
                                      i.peer, i.bytes, request_field(i.request));
                 },
                 [](const Recv& i) {
                   return fmt::format(" {} mb={} from={} bytes={:.6g}{}", to_string(i.what), i.mb,
                                      i.peer, i.bytes, request_field(i.request));
                 },
                 [](const Collective& i) {
                   return fmt::format(" {} group={} bytes={:.6g}{}{}{}", to_string(i.purpose),
                                      i.group, i.bytes, optional_fields(i.mb, i.block),
                                      bucket_field(i.begin, i.end), request_field(i.request));
                 },
                 [](const OptimizerStep& i) {
                   return fmt::format(" params={:.6g} bytes={:.6g}", i.parameters, i.bytes);
                 },
                 [](const Wait& i) {
                   std::string s = fmt::format(" req={} {}", i.request, to_string(i.what));
                   if (i.what == Awaits::collective)
                     s += fmt::format(" {} {}", to_string(i.op), to_string(i.purpose));
                   return s + fmt::format(" bytes={:.6g}", i.bytes);
                 },
             },
             instruction);
}

std::string to_text(const Schedule& schedule, int only_rank) {
  if (only_rank >= schedule.world)
    fail("rank {} out of range for a schedule of {} ranks", only_rank, schedule.world);
  std::string out;
  for (int r = 0; r < schedule.world; ++r) {
    if (only_rank >= 0 && r != only_rank) continue;
    for (const auto& instruction : schedule.ranks[r])
      out += fmt::format("rank {}: {}\n", r, to_string(instruction));
  }
  return out;
}

void to_json(nlohmann::json& j, const Instruction& instruction) {
  j = std::visit(
      overloaded{
          [](const LoadMicrobatch& i) {
            return nlohmann::json{{"mb", i.mb}, {"sequences", i.sequences}, {"tokens", i.tokens}};
          },
          [](const Forward& i) {
            return nlohmann::json{{"mb", i.mb},
                                  {"begin", i.begin},
                                  {"end", i.end},
                                  {"flops", i.flops},
                                  {"bytes", i.bytes},
                                  {"activation_bytes", i.activation_bytes},
                                  {"replicas", i.replicas}};
          },
          [](const Backward& i) {
            return nlohmann::json{{"mb", i.mb},
                                  {"begin", i.begin},
                                  {"end", i.end},
                                  {"flops", i.flops},
                                  {"bytes", i.bytes},
                                  {"activation_bytes", i.activation_bytes},
                                  {"logits_gradient_bytes", i.logits_gradient_bytes},
                                  {"rebuilt_bytes", i.rebuilt_bytes},
                                  {"recompute", i.recompute},
                                  {"replicas", i.replicas}};
          },
          [](const Send& i) {
            return nlohmann::json{
                {"what", to_string(i.what)}, {"mb", i.mb}, {"peer", i.peer}, {"bytes", i.bytes}};
          },
          [](const Recv& i) {
            return nlohmann::json{
                {"what", to_string(i.what)}, {"mb", i.mb}, {"peer", i.peer}, {"bytes", i.bytes}};
          },
          [](const Collective& i) {
            nlohmann::json j{{"purpose", to_string(i.purpose)},
                             {"group", i.group},
                             {"bytes", i.bytes},
                             {"mb", i.mb},
                             {"block", i.block}};
            if (i.begin >= 0) j["begin"] = i.begin, j["end"] = i.end;
            return j;
          },
          [](const OptimizerStep& i) {
            return nlohmann::json{{"parameters", i.parameters}, {"bytes", i.bytes}};
          },
          [](const Wait& i) {
            nlohmann::json j{
                {"request", i.request}, {"what", to_string(i.what)}, {"bytes", i.bytes}};
            if (i.what == Awaits::collective)
              j["collective"] = to_string(i.op), j["purpose"] = to_string(i.purpose);
            return j;
          },
      },
      instruction);
  j["op"] = verb(instruction);
  // A start's request; blocking instructions and waits print none here (a wait's is above).
  const int request = std::visit(
      [](const auto& in) -> int {
        using T = std::decay_t<decltype(in)>;
        if constexpr (std::is_same_v<T, Send> || std::is_same_v<T, Recv> ||
                      std::is_same_v<T, Collective>)
          return in.request;
        return -1;
      },
      instruction);
  if (request >= 0 && !std::holds_alternative<Wait>(instruction)) j["request"] = request;
}

void to_json(nlohmann::json& j, const Schedule& schedule) {
  nlohmann::json groups = nlohmann::json::array();
  for (std::size_t g = 0; g < schedule.groups.size(); ++g)
    groups.push_back(
        {{"kind", to_string(schedule.group_kinds.at(g))}, {"ranks", schedule.groups[g]}});
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& stream : schedule.ranks) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& instruction : stream) {
      nlohmann::json one;
      to_json(one, instruction);
      list.push_back(std::move(one));
    }
    ranks.push_back(std::move(list));
  }
  nlohmann::json plan;
  to_json(plan, schedule.plan);
  j = nlohmann::json{{"world", schedule.world},
                     {"plan", plan},
                     {"global_batch", schedule.global_batch},
                     {"microbatch", schedule.microbatch},
                     {"seq", schedule.seq},
                     {"groups", groups},
                     {"static_bytes", schedule.static_bytes},
                     {"ranks", ranks}};
}

}  // namespace fabtrain
