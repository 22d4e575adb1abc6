// Run record lines and Chrome trace events (see run_record.hpp).
#include "exec/run_record.hpp"

#include <thread>
#include <type_traits>

#include "common/error.hpp"
#include "exec/checkpoint.hpp"

namespace fabtrain {

namespace {
constexpr const char* kFabtrainVersion = FABTRAIN_VERSION;  // CMake's project(VERSION)
}  // namespace

InstructionInfo describe(const Schedule& schedule, int rank, const Instruction& instruction) {
  InstructionInfo info;
  std::visit(
      [&](const auto& in) {
        using T = std::decay_t<decltype(in)>;
        if constexpr (std::is_same_v<T, LoadMicrobatch>) {
          info.kind = "load";
          info.bytes = double(in.tokens) * 2 * sizeof(int);
        } else if constexpr (std::is_same_v<T, Forward>) {
          info.kind = "fwd";
          info.flops = in.flops;
          info.bytes = in.bytes;
        } else if constexpr (std::is_same_v<T, Backward>) {
          info.kind = "bwd";
          info.flops = in.flops;
          info.bytes = in.bytes;
        } else if constexpr (std::is_same_v<T, Send>) {
          info.kind = "send";
          info.communication = true;
          info.bytes = in.bytes;
          info.peers = {in.peer};
        } else if constexpr (std::is_same_v<T, Recv>) {
          info.kind = "recv";
          info.communication = true;
          info.bytes = in.bytes;
          info.peers = {in.peer};
        } else if constexpr (std::is_same_v<T, Collective>) {
          info.kind = to_string(in.op);
          info.communication = true;
          info.bytes = in.bytes;
          if (in.group >= 0 && in.group < int(schedule.groups.size()))
            for (int r : schedule.groups[in.group])
              if (r != rank) info.peers.push_back(r);
        } else {
          static_assert(std::is_same_v<T, OptimizerStep>);
          info.kind = "optimizer";
          info.bytes = in.bytes;
          info.flops = in.parameters * 12;  // AdamW: about a dozen operations per parameter
        }
      },
      instruction);
  return info;
}

nlohmann::json to_json(const RunHeader& h) {
  return {{"model", {{"name", h.model.name}, {"layers", h.model.n_layer}, {"hidden", h.model.n_embd},
                     {"heads", h.model.n_head}, {"context", h.model.n_ctx}, {"vocab", h.model.vocab_size}}},
          {"plan", to_string(h.plan)},
          {"technique", technique_name(h.plan)},
          {"world", h.world},
          {"host", {{"name", h.host}, {"cpu", h.cpu}, {"cores", std::thread::hardware_concurrency()},
                    {"ranks_on_host", h.ranks_on_host}}},
          {"device", h.device},
          {"threads", h.threads},
          {"batch", h.batch},
          {"seq", h.seq},
          {"microbatch", h.microbatch},
          {"steps", h.steps},
          {"start_step", h.start_step},
          {"versions", {{"fabtrain", kFabtrainVersion}, {"mpi", h.mpi_version}, {"compiler", __VERSION__}}}};
}

RunRecord::RunRecord(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) fail("--record {}: cannot write the file", path);
}

void RunRecord::header(const nlohmann::json& header) {
  nlohmann::json line = header;
  line["type"] = "header";
  out_ << line.dump() << '\n';
  out_.flush();
  if (!out_) fail("--record {}: write error (disk full?)", path_);
}

void RunRecord::step(const StepSummary& s, const Schedule& schedule, const StepTimings& timings) {
  nlohmann::json line = {{"type", "step"},       {"step", s.step},
                         {"wall_s", s.wall_s},   {"loss", s.loss},
                         {"lr", s.lr},           {"grad_norm", s.grad_norm},
                         {"tokens_per_s", s.tokens_per_s}};
  if (s.val_loss >= 0) line["val_loss"] = s.val_loss;
  if (!timings.empty()) {
    nlohmann::json instructions = nlohmann::json::array();
    for (int r = 0; r < int(timings.size()); ++r)
      for (std::size_t i = 0; i < timings[r].size() && i < schedule.ranks[r].size(); ++i) {
        const InstructionInfo info = describe(schedule, r, schedule.ranks[r][i]);
        nlohmann::json item = {{"rank", r},
                               {"index", i},
                               {"kind", info.kind},
                               {"name", to_string(schedule.ranks[r][i])},
                               {"start_s", timings[r][i].start_s},
                               {"duration_s", timings[r][i].duration_s},
                               {"bytes", info.bytes},
                               {"peers", info.peers}};
        if (info.flops > 0) item["flops"] = info.flops;
        instructions.push_back(std::move(item));
      }
    line["instructions"] = std::move(instructions);
  }
  out_ << line.dump() << '\n';
  out_.flush();
  if (!out_) fail("--record {}: write error", path_);
}

ChromeTrace::ChromeTrace(int ranks) : events_(nlohmann::json::array()) {
  for (int r = 0; r < ranks; ++r) {
    events_.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"args", {{"name", fmt::format("rank {}", r)}}}});
    events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", 0}, {"args", {{"name", "compute"}}}});
    events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", 1}, {"args", {{"name", "communication"}}}});
  }
}

void ChromeTrace::add_step(int step, double step_offset_s, const Schedule& schedule,
                           const StepTimings& timings) {
  for (int r = 0; r < int(timings.size()); ++r)
    for (std::size_t i = 0; i < timings[r].size() && i < schedule.ranks[r].size(); ++i) {
      const InstructionInfo info = describe(schedule, r, schedule.ranks[r][i]);
      nlohmann::json args = {{"step", step}, {"bytes", info.bytes}};
      if (info.flops > 0) args["flops"] = info.flops;
      events_.push_back({{"ph", "X"},
                         {"name", to_string(schedule.ranks[r][i])},
                         {"cat", info.kind},
                         {"pid", r},
                         {"tid", info.communication ? 1 : 0},
                         {"ts", (step_offset_s + timings[r][i].start_s) * 1e6},
                         {"dur", timings[r][i].duration_s * 1e6},
                         {"args", std::move(args)}});
    }
}

void ChromeTrace::write(const std::string& path) const {
  const nlohmann::json doc = {{"traceEvents", events_}, {"displayTimeUnit", "ms"}};
  const std::string text = doc.dump();
  write_text_atomically(path, text, "--trace");
}

}  // namespace fabtrain
