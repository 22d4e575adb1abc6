// Reading bench files and run records (see inputs.hpp).
#include "calibrate/inputs.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "common/error.hpp"

namespace fabtrain::calib {
namespace {

using nlohmann::json;

void reject_unknown(const json& node, const std::set<std::string>& known, const std::string& where,
                    const std::string& file) {
  if (!node.is_object()) fail("{}: {} must be an object", file, where);
  for (const auto& [key, value] : node.items())
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail("{}: unknown key '{}' in {} (known: {})", file, key, where, list);
    }
}

const json& field(const json& node, const std::string& key, const std::string& where,
                  const std::string& file) {
  if (!node.is_object() || !node.contains(key)) fail("{}: {} has no field '{}'", file, where, key);
  return node.at(key);
}

double number(const json& node, const std::string& key, const std::string& where,
              const std::string& file, double min = 0) {
  const json& v = field(node, key, where, file);
  if (!v.is_number()) fail("{}: {}.{} is not a number", file, where, key);
  const double x = v.get<double>();
  if (!(x >= min)) fail("{}: {}.{}={} must be at least {}", file, where, key, x, min);
  return x;
}

std::string text(const json& node, const std::string& key, const std::string& where,
                 const std::string& file) {
  const json& v = field(node, key, where, file);
  if (!v.is_string()) fail("{}: {}.{} is not a string", file, where, key);
  return v.get<std::string>();
}

const json& array(const json& node, const std::string& key, const std::string& where,
                  const std::string& file) {
  const json& v = field(node, key, where, file);
  if (!v.is_array()) fail("{}: {}.{} is not an array", file, where, key);
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The median over a per-rank list of {"rank", "seconds", rate_key}.
double median_seconds(const json& ranks, const std::string& rate_key, const std::string& where,
                      const std::string& file) {
  if (!ranks.is_array() || ranks.empty()) fail("{}: {}.ranks must be a non-empty array", file, where);
  std::vector<double> seconds;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::string w = fmt::format("{}.ranks[{}]", where, i);
    reject_unknown(ranks[i], {"rank", "seconds", rate_key}, w, file);
    seconds.push_back(number(ranks[i], "seconds", w, file, 1e-12));
  }
  return median(seconds);
}

}  // namespace

BenchData parse_bench(const json& doc, const std::string& path) {
  const std::string top = "the bench file";
  reject_unknown(doc, {"format", "version", "model", "batch", "seq", "world", "hosts", "device",
                       "threads", "mpi", "gemm", "memory", "p2p", "collectives"},
                 top, path);
  if (text(doc, "format", top, path) != "fabtrain-bench")
    fail("{}: format '{}' is not 'fabtrain-bench' (write it with fabtrain-exec bench)", path,
         doc.at("format").get<std::string>());
  if (number(doc, "version", top, path) != 1)
    fail("{}: version {} is not supported (this program reads version 1)", path, doc.at("version").dump());
  BenchData b;
  b.path = path;
  b.model_fields = field(doc, "model", top, path);
  b.model = text(b.model_fields, "name", "model", path);
  b.batch = int(number(doc, "batch", top, path, 1));
  b.seq = int(number(doc, "seq", top, path, 1));
  b.world = int(number(doc, "world", top, path, 1));
  b.threads = int(number(doc, "threads", top, path, 1));
  for (const auto& h : array(doc, "hosts", top, path)) b.hosts.push_back(h.get<std::string>());
  b.device = text(field(doc, "device", top, path), "description", "device", path);
  const json& gemm = array(doc, "gemm", top, path);
  for (std::size_t i = 0; i < gemm.size(); ++i) {
    const std::string w = fmt::format("gemm[{}]", i);
    reject_unknown(gemm[i], {"name", "pass", "m", "n", "k", "flops", "ranks"}, w, path);
    GemmSample g{text(gemm[i], "name", w, path), text(gemm[i], "pass", w, path),
                 number(gemm[i], "flops", w, path, 1)};
    if (g.pass != "forward" && g.pass != "backward_input" && g.pass != "backward_weight")
      fail("{}: {}.pass '{}' is not forward, backward_input or backward_weight", path, w, g.pass);
    g.seconds = median_seconds(field(gemm[i], "ranks", w, path), "flops_per_s", w, path);
    b.gemm.push_back(g);
  }
  const json& memory = array(doc, "memory", top, path);
  for (std::size_t i = 0; i < memory.size(); ++i) {
    const std::string w = fmt::format("memory[{}]", i);
    reject_unknown(memory[i], {"kernel", "bytes", "ranks"}, w, path);
    MemorySample m{text(memory[i], "kernel", w, path), number(memory[i], "bytes", w, path, 1)};
    m.seconds = median_seconds(field(memory[i], "ranks", w, path), "bytes_per_s", w, path);
    b.memory.push_back(m);
  }
  const json& p2p = array(doc, "p2p", top, path);
  for (std::size_t i = 0; i < p2p.size(); ++i) {
    const std::string w = fmt::format("p2p[{}]", i);
    reject_unknown(p2p[i], {"a", "b", "host_a", "host_b", "rtt_s", "latency_s", "latency_bytes",
                            "message_bytes", "messages", "stream_s", "bandwidth", "message_latencies",
                            "rtt_p90_s", "tcp_streams", "tcp_bandwidth_one_stream", "tcp_bandwidth"},
                   w, path);
    b.pairs.push_back({int(number(p2p[i], "a", w, path)), int(number(p2p[i], "b", w, path)),
                       number(p2p[i], "rtt_s", w, path, 1e-12), number(p2p[i], "bandwidth", w, path, 1)});
    if (p2p[i].contains("message_latencies")) {
      const json& ml = array(p2p[i], "message_latencies", w, path);
      for (std::size_t k = 0; k < ml.size(); ++k) {
        const std::string wk = fmt::format("{}.message_latencies[{}]", w, k);
        reject_unknown(ml[k], {"bytes", "one_way_s"}, wk, path);
        b.pairs.back().message_latencies.emplace_back(number(ml[k], "bytes", wk, path, 1),
                                                      number(ml[k], "one_way_s", wk, path, 1e-12));
      }
    }
  }
  const json& coll = array(doc, "collectives", top, path);
  for (std::size_t i = 0; i < coll.size(); ++i) {
    const std::string w = fmt::format("collectives[{}]", i);
    reject_unknown(coll[i], {"op", "group", "bytes", "ranks", "seconds", "algbw", "busbw"}, w, path);
    b.collectives.push_back({text(coll[i], "op", w, path), number(coll[i], "bytes", w, path),
                             number(coll[i], "seconds", w, path), number(coll[i], "busbw", w, path),
                             int(number(coll[i], "ranks", w, path, 1))});
  }
  if (b.gemm.empty()) fail("{}: gemm is empty: nothing to fit the matrix-product efficiency on", path);
  if (b.memory.empty()) fail("{}: memory is empty: nothing to fit the memory efficiency on", path);
  return b;
}

BenchData read_bench(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("--bench {}: cannot read the file", path);
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    fail("--bench {}: not valid JSON: {}", path, e.what());
  }
  try {
    return parse_bench(doc, path);
  } catch (const json::exception& e) {
    fail("{}: a field has the wrong type: {}", path, e.what());
  }
}

RunData read_run_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("--runs {}: cannot read the file", path);
  RunData run;
  run.path = path;
  const std::regex blocks_re("blocks=(\\d+):(\\d+)");
  std::string line;
  int line_no = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const std::string where = fmt::format("line {}", line_no);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      fail("{}: {} is not valid JSON: {}", path, where, e.what());
    }
    try {
      const std::string type = text(j, "type", where, path);
      if (type == "header") {
        header = true;
        run.plan = text(j, "plan", where, path);
        run.world = int(number(j, "world", where, path, 1));
        if (j.contains("model") && j["model"].is_object()) {
          run.model_fields = j["model"];
          if (j["model"].contains("name")) run.model = j["model"]["name"].get<std::string>();
        }
        if (j.contains("batch")) run.batch = int(number(j, "batch", where, path, 1));
        if (j.contains("seq")) run.seq = int(number(j, "seq", where, path, 1));
        continue;
      }
      if (type != "step") fail("{}: {}: unknown type '{}' (header or step)", path, where, type);
      if (!header) fail("{}: {}: a step before the header", path, where);
      reject_unknown(j, {"type", "step", "wall_s", "loss", "lr", "grad_norm", "tokens_per_s",
                         "val_loss", "instructions"},
                     where, path);
      if (!j.contains("instructions")) continue;  // not timed
      StepSample s;
      s.step = int(number(j, "step", where, path));
      s.wall_s = number(j, "wall_s", where, path, 1e-12);
      s.communication_s.assign(run.world, 0.0);
      s.other_s.assign(run.world, 0.0);
      const json& items = array(j, "instructions", where, path);
      std::map<std::string, std::size_t> call_of;  // "name#occurrence" -> index in s.collectives
      std::vector<std::map<std::string, int>> seen_by_rank(run.world);  // name -> occurrences
      for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string w = fmt::format("{} instructions[{}]", where, i);
        reject_unknown(items[i], {"rank", "index", "kind", "name", "start_s", "duration_s", "bytes",
                                  "peers", "flops"},
                       w, path);
        const int rank = int(number(items[i], "rank", w, path));
        if (rank >= run.world) fail("{}: {}.rank={} but the header says world={}", path, w, rank, run.world);
        const std::string kind = text(items[i], "kind", w, path);
        const double duration = number(items[i], "duration_s", w, path);
        if (kind == "fwd" || kind == "bwd" || kind == "optimizer") {
          ComputeSample c{kind, rank, items[i].contains("flops") ? number(items[i], "flops", w, path) : 0.0,
                          number(items[i], "bytes", w, path), 1, duration};
          std::smatch m;
          const std::string name = text(items[i], "name", w, path);
          if (kind != "optimizer") {
            if (!std::regex_search(name, m, blocks_re))
              fail("{}: {}.name '{}' has no blocks=BEGIN:END", path, w, name);
            c.blocks = std::max(1, std::stoi(m[2]) - std::stoi(m[1]));
          }
          s.compute.push_back(c);
        } else if (kind == "load") {
          s.other_s[rank] += duration;
        } else {
          s.communication_s[rank] += duration;
          if (kind == "all_reduce" || kind == "reduce_scatter" || kind == "all_gather") {
            const std::string name = text(items[i], "name", w, path);
            const double bytes = number(items[i], "bytes", w, path);
            const double start = items[i].contains("start_s") ? number(items[i], "start_s", w, path) : -1;
            const std::string key = name + "#" + std::to_string(seen_by_rank[rank][name]++);
            const auto [at, fresh] = call_of.emplace(key, s.collectives.size());
            if (fresh) {
              s.collectives.push_back({kind, bytes, duration, 1, start, start + duration});
            } else {
              auto& call = s.collectives[at->second];
              call.seconds = std::min(call.seconds, duration);
              call.last_start_s = std::max(call.last_start_s, start);
              call.last_end_s = std::max(call.last_end_s, start + duration);
              ++call.members;
            }
          }
        }
      }
      for (auto& call : s.collectives)
        if (call.last_start_s >= 0) call.seconds = call.last_end_s - call.last_start_s;
      run.steps.push_back(std::move(s));
    } catch (const json::exception& e) {
      fail("{}: {}: a field has the wrong type: {}", path, where, e.what());
    }
  }
  if (!header) fail("{}: no header line (is it a run record from fabtrain-exec train --record?)", path);
  if (run.steps.empty())
    fail("{}: no step carries instruction timings (record with fabtrain-exec train --record)", path);
  return run;
}

ModelSpec model_of(const json& fields, const std::string& name, const std::string& path) {
  ModelSpec model;
  try {
    model.name = name;
    model.n_layer = fields.at("layers").get<int>();
    model.n_embd = fields.at("hidden").get<int>();
    model.n_head = fields.at("heads").get<int>();
    model.n_ctx = fields.at("context").get<int>();
    model.vocab_size = fields.at("vocab").get<int>();
  } catch (const json::exception& e) {
    fail("{}: model needs layers, hidden, heads, context and vocab: {}", path, e.what());
  }
  validate(model);
  return model;
}

}  // namespace fabtrain::calib
