// Run record lines to and from JSON (see run_record_format.hpp).
#include "plan/run_record_format.hpp"

#include <climits>
#include <fstream>

#include "common/error.hpp"
#include "common/json_fields.hpp"
#include "common/strict_json.hpp"
#include "plan/instruction_info.hpp"
#include "plan/verb.hpp"

namespace fabtrain {

using nlohmann::json;
using namespace json_fields;

namespace {

// The header's keys this reader knows; any other is the mode's own (RunHeader::extra).
const std::set<std::string> kHeaderKeys = {
    "type",    "model", "plan", "technique",  "world", "host",       "device",
    "threads", "batch", "seq",  "microbatch", "steps", "start_step", "versions"};

int optional_int(const json& node, const std::string& key, const std::string& where,
                 const std::string& file, int fallback) {
  return node.contains(key) ? integer(node, key, where, file, 0, INT_MAX) : fallback;
}

std::string optional_text(const json& node, const std::string& key, const std::string& where,
                          const std::string& file) {
  return node.is_object() && node.contains(key) ? text(node, key, where, file) : std::string();
}

// An instruction's "comm" flag; older records lack it, and the verb says.
bool communication_of(const json& item, const std::string& kind, const std::string& where,
                      const std::string& file) {
  if (!item.contains("comm")) try {
      return is_communication_verb(kind);
    } catch (const Error& e) {
      fail("{}: {}.kind: {}", file, where, e.what());
    }
  if (!item.at("comm").is_boolean()) fail("{}: {}.comm must be true or false", file, where);
  return item.at("comm").get<bool>();
}

}  // namespace

json to_json(const RunHeader& h) {
  json j = h.extra;
  j.update(json{
      {"type", "header"},
      {"model",
       {{"name", h.model.name},
        {"layers", h.model.n_layer},
        {"hidden", h.model.n_embd},
        {"heads", h.model.n_head},
        {"context", h.model.n_ctx},
        {"vocab", h.model.vocab_size}}},
      {"plan", to_string(h.plan)},
      {"technique", technique_name(h.plan)},
      {"world", h.world},
      {"host",
       {{"name", h.host}, {"cpu", h.cpu}, {"cores", h.cores}, {"ranks_on_host", h.ranks_on_host}}},
      {"device", h.device},
      {"threads", h.threads},
      {"batch", h.batch},
      {"seq", h.seq},
      {"microbatch", h.microbatch},
      {"steps", h.steps},
      {"start_step", h.start_step},
      {"versions",
       {{"fabtrain", h.fabtrain_version}, {"mpi", h.mpi_version}, {"compiler", h.compiler}}}});
  return j;
}

RunHeader run_header_from_json(const json& j, const std::string& where, const std::string& file) {
  RunHeader h;
  const std::string plan_text = text(j, "plan", where, file);
  h.world = bounded(j, "world", where, file, limits::ranks);
  try {
    h.plan = parse_plan(plan_text);
  } catch (const Error& e) {
    fail("{}: {}.plan: {}", file, where, e.what());
  }
  if (h.plan.ranks() != h.world)
    fail("{}: {}: plan {} has dp*tp*pp = {} ranks but world={}", file, where, plan_text,
         h.plan.ranks(), h.world);
  if (j.contains("model")) {
    const json& m = j.at("model");
    const std::string w = where + ".model";
    if (!m.is_object()) fail("{}: {} must be an object", file, w);
    h.model.name = optional_text(m, "name", w, file);
    h.model.n_layer = optional_int(m, "layers", w, file, 0);
    h.model.n_embd = optional_int(m, "hidden", w, file, 0);
    h.model.n_head = optional_int(m, "heads", w, file, 0);
    h.model.n_ctx = optional_int(m, "context", w, file, 0);
    h.model.vocab_size = optional_int(m, "vocab", w, file, 0);
  }
  if (j.contains("batch")) h.batch = bounded(j, "batch", where, file, limits::batch);
  if (j.contains("seq")) h.seq = bounded(j, "seq", where, file, limits::sequence);
  h.microbatch = optional_int(j, "microbatch", where, file, 0);
  h.steps = optional_int(j, "steps", where, file, 0);
  h.start_step = optional_int(j, "start_step", where, file, 0);
  h.threads = optional_int(j, "threads", where, file, 1);
  h.device = j.contains("device") ? text(j, "device", where, file) : std::string();
  if (j.contains("host")) {
    const json& host = j.at("host");
    const std::string w = where + ".host";
    h.host = optional_text(host, "name", w, file);
    h.cpu = optional_text(host, "cpu", w, file);
    h.cores = optional_int(host, "cores", w, file, 0);
    h.ranks_on_host = optional_int(host, "ranks_on_host", w, file, 1);
  }
  if (j.contains("versions")) {
    const json& v = j.at("versions");
    const std::string w = where + ".versions";
    h.fabtrain_version = optional_text(v, "fabtrain", w, file);
    h.mpi_version = optional_text(v, "mpi", w, file);
    h.compiler = optional_text(v, "compiler", w, file);
  }
  for (const auto& [key, value] : j.items())
    if (!kHeaderKeys.count(key)) h.extra[key] = value;
  return h;
}

StepLine step_line(const StepSummary& summary, const Schedule& schedule,
                   const StepTimings& timings) {
  StepLine line{summary, {}};
  for (int r = 0; r < int(timings.size()); ++r)
    for (std::size_t i = 0; i < timings[r].size() && i < schedule.ranks[r].size(); ++i) {
      const Instruction& in = schedule.ranks[r][i];
      const InstructionInfo info = describe(schedule, r, in);
      const int request = request_of(in);
      line.instructions.push_back({r, int(i), info.kind, is_communication(in), to_string(in),
                                   timings[r][i].start_s, timings[r][i].duration_s, info.bytes,
                                   info.flops, info.peers, request});
    }
  return line;
}

json to_json(const StepLine& line) {
  const StepSummary& s = line.summary;
  json j = {{"type", "step"},
            {"step", s.step},
            {"wall_s", s.wall_s},
            {"loss", s.loss},
            {"lr", s.lr},
            {"grad_norm", s.grad_norm},
            {"tokens_per_s", s.tokens_per_s}};
  if (s.val_loss >= 0) j["val_loss"] = s.val_loss;
  if (!s.peak_rss_bytes.empty()) j["peak_rss_bytes"] = s.peak_rss_bytes;
  if (line.instructions.empty()) return j;
  json instructions = json::array();
  for (const InstructionRecord& r : line.instructions) {
    json item = {{"rank", r.rank},          {"index", r.index}, {"kind", r.kind},
                 {"comm", r.communication}, {"name", r.name},   {"duration_s", r.duration_s},
                 {"bytes", r.bytes},        {"peers", r.peers}};
    if (r.start_s >= 0) item["start_s"] = r.start_s;
    if (r.flops > 0) item["flops"] = r.flops;
    if (r.request >= 0) item["request"] = r.request;
    instructions.push_back(std::move(item));
  }
  j["instructions"] = std::move(instructions);
  return j;
}

RunRecordFile read_run_record_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("run record {}: cannot read the file", path);
  RunRecordFile file;
  bool header = false;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const std::string where = fmt::format("line {}", line_no);
    const json j = parse_json_strict(line, fmt::format("{}: {}", path, where));
    try {
      const std::string type = text(j, "type", where, path);
      if (type != "header" && type != "step")
        fail("{}: {}: unknown type '{}' (header or step)", path, where, type);
      if ((type == "header") == header)
        fail("{}: {}: {}", path, where, header ? "a second header" : "a step before the header");
      if (header) {
        file.steps.push_back(step_line_from_json(j, file.header.world, where, path));
        continue;
      }
      file.header = run_header_from_json(j, where, path);
      file.header_json = j;
      header = true;
    } catch (const json::exception& e) {  // a field of another JSON type than the format's
      fail("{}: {}: a field has the wrong type: {}", path, where, e.what());
    }
  }
  if (!header) fail("run record {}: no header line", path);
  return file;
}

StepLine step_line_from_json(const json& j, int world, const std::string& where,
                             const std::string& file) {
  reject_unknown(j,
                 {"type", "step", "wall_s", "loss", "lr", "grad_norm", "tokens_per_s", "val_loss",
                  "peak_rss_bytes", "instructions"},
                 where, file);
  StepLine line;
  StepSummary& s = line.summary;
  s.step = integer(j, "step", where, file, 0, INT_MAX);
  s.wall_s = number(j, "wall_s", where, file, 1e-12);
  // loss, lr and grad_norm are recorded for people; a diverged step may hold any float.
  auto value = [&](const char* key) {
    return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : 0.0;
  };
  s.loss = float(value("loss"));
  s.lr = float(value("lr"));
  s.grad_norm = float(value("grad_norm"));
  s.tokens_per_s = value("tokens_per_s");
  if (j.contains("val_loss")) s.val_loss = float(number(j, "val_loss", where, file));
  if (j.contains("peak_rss_bytes")) {
    const json& rss = array(j, "peak_rss_bytes", where, file);
    if (int(rss.size()) != world)
      fail("{}: {}.peak_rss_bytes has {} values but the header says world={}", file, where,
           rss.size(), world);
    for (std::size_t r = 0; r < rss.size(); ++r) {
      if (!rss[r].is_number() || !(rss[r].get<double>() >= 0))
        fail("{}: {}.peak_rss_bytes[{}] must be a number of bytes, zero or more", file, where, r);
      s.peak_rss_bytes.push_back(rss[r].get<double>());
    }
  }
  if (!j.contains("instructions")) return line;
  const json& items = array(j, "instructions", where, file);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string w = fmt::format("{} instructions[{}]", where, i);
    reject_unknown(items[i],
                   {"rank", "index", "kind", "comm", "name", "start_s", "duration_s", "bytes",
                    "peers", "flops", "request"},
                   w, file);
    InstructionRecord r;
    r.rank = integer(items[i], "rank", w, file, 0, INT_MAX);
    if (r.rank >= world)
      fail("{}: {}.rank={} but the header says world={}", file, w, r.rank, world);
    r.index = items[i].contains("index") ? integer(items[i], "index", w, file, 0, INT_MAX) : 0;
    r.kind = canonical_verb(text(items[i], "kind", w, file));
    r.communication = communication_of(items[i], r.kind, w, file);
    r.name = text(items[i], "name", w, file);
    r.duration_s = number(items[i], "duration_s", w, file);
    if (items[i].contains("start_s")) r.start_s = number(items[i], "start_s", w, file);
    r.bytes = number(items[i], "bytes", w, file);
    r.flops = items[i].contains("flops") ? number(items[i], "flops", w, file) : 0;
    if (items[i].contains("peers"))
      for (const json& p : array(items[i], "peers", w, file))
        r.peers.push_back(int(json_integer(p, fmt::format("{}: {}.peers", file, w), 0, world - 1)));
    if (items[i].contains("request")) r.request = integer(items[i], "request", w, file, 0, INT_MAX);
    line.instructions.push_back(std::move(r));
  }
  return line;
}

}  // namespace fabtrain
