// Reading bench files and run records (see inputs.hpp).
#include "calibrate/inputs.hpp"

#include <algorithm>
#include <climits>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>

#include "common/error.hpp"
#include "common/json_fields.hpp"
#include "common/limits.hpp"
#include "common/strict_json.hpp"
#include "common/strict_number.hpp"
#include "plan/plan.hpp"
#include "plan/run_record_format.hpp"

namespace fabtrain::calib {
namespace {

using nlohmann::json;
using namespace json_fields;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The median over a per-rank list of {"rank", "seconds", rate_key}.
double median_seconds(const json& ranks, const std::string& rate_key, const std::string& where,
                      const std::string& file) {
  if (!ranks.is_array() || ranks.empty())
    fail("{}: {}.ranks must be a non-empty array", file, where);
  std::vector<double> seconds;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::string w = fmt::format("{}.ranks[{}]", where, i);
    reject_unknown(ranks[i], {"rank", "seconds", rate_key}, w, file);
    seconds.push_back(number(ranks[i], "seconds", w, file, 1e-12));
  }
  return median(seconds);
}

void read_gemm(const json& doc, const std::string& top, const std::string& path, BenchData& b) {
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
}

void read_memory(const json& doc, const std::string& top, const std::string& path, BenchData& b) {
  const json& memory = array(doc, "memory", top, path);
  for (std::size_t i = 0; i < memory.size(); ++i) {
    const std::string w = fmt::format("memory[{}]", i);
    reject_unknown(memory[i], {"kernel", "bytes", "ranks"}, w, path);
    MemorySample m{text(memory[i], "kernel", w, path), number(memory[i], "bytes", w, path, 1)};
    m.seconds = median_seconds(field(memory[i], "ranks", w, path), "bytes_per_s", w, path);
    b.memory.push_back(m);
  }
}

PairSample read_pair(const json& p, const std::string& w, const std::string& path, int world) {
  reject_unknown(p,
                 {"a", "b", "host_a", "host_b", "rtt_s", "latency_s", "latency_bytes",
                  "message_bytes", "messages", "stream_s", "bandwidth", "message_latencies",
                  "rtt_p90_s", "tcp_streams", "tcp_bandwidth_one_stream", "tcp_bandwidth"},
                 w, path);
  PairSample pair;
  pair.a = integer(p, "a", w, path, 0, world - 1);
  pair.b = integer(p, "b", w, path, 0, world - 1);
  pair.rtt_s = number(p, "rtt_s", w, path, 1e-12);
  pair.bandwidth = number(p, "bandwidth", w, path, 1);
  if (p.contains("message_bytes")) pair.message_bytes = number(p, "message_bytes", w, path, 1);
  if (p.contains("host_a")) pair.host_a = text(p, "host_a", w, path);
  if (p.contains("host_b")) pair.host_b = text(p, "host_b", w, path);
  if (p.contains("message_latencies")) {
    const json& ml = array(p, "message_latencies", w, path);
    for (std::size_t k = 0; k < ml.size(); ++k) {
      const std::string wk = fmt::format("{}.message_latencies[{}]", w, k);
      reject_unknown(ml[k], {"bytes", "one_way_s"}, wk, path);
      pair.message_latencies.emplace_back(number(ml[k], "bytes", wk, path, 1),
                                          number(ml[k], "one_way_s", wk, path, 1e-12));
    }
  }
  return pair;
}

void read_collectives(const json& doc, const std::string& top, const std::string& path,
                      BenchData& b) {
  const json& coll = array(doc, "collectives", top, path);
  for (std::size_t i = 0; i < coll.size(); ++i) {
    const std::string w = fmt::format("collectives[{}]", i);
    reject_unknown(coll[i], {"op", "group", "bytes", "ranks", "seconds", "algbw", "busbw"}, w,
                   path);
    const std::string op = text(coll[i], "op", w, path);
    if (op != "all_reduce" && op != "reduce_scatter" && op != "all_gather")
      fail(
          "{}: {}.op '{}' is not all_reduce, reduce_scatter or all_gather (what the bench "
          "measures)",
          path, w, op);
    b.collectives.push_back({op, number(coll[i], "bytes", w, path),
                             number(coll[i], "seconds", w, path), number(coll[i], "busbw", w, path),
                             integer(coll[i], "ranks", w, path, 1, b.world)});
  }
}

}  // namespace

BenchData parse_bench(const json& doc, const std::string& path) {
  const std::string top = "the bench file";
  reject_unknown(doc,
                 {"format", "version", "model", "batch", "seq", "world", "hosts", "device",
                  "threads", "mpi", "gemm", "memory", "p2p", "collectives"},
                 top, path);
  if (text(doc, "format", top, path) != "fabtrain-bench")
    fail("{}: format '{}' is not 'fabtrain-bench' (write it with fabtrain-exec bench)", path,
         doc.at("format").get<std::string>());
  if (number(doc, "version", top, path) != 1)
    fail("{}: version {} is not supported (this program reads version 1)", path,
         doc.at("version").dump());
  BenchData b;
  b.path = path;
  b.model_fields = field(doc, "model", top, path);
  b.model = text(b.model_fields, "name", "model", path);
  b.batch = bounded(doc, "batch", top, path, limits::batch);
  b.seq = bounded(doc, "seq", top, path, limits::sequence);
  b.world = bounded(doc, "world", top, path, limits::ranks);
  b.threads = integer(doc, "threads", top, path, 1, 1 << 16);
  for (const auto& h : array(doc, "hosts", top, path)) b.hosts.push_back(h.get<std::string>());
  if (int(b.hosts.size()) != b.world)
    fail("{}: hosts lists {} hosts but world={} (one per rank)", path, b.hosts.size(), b.world);
  b.device = text(field(doc, "device", top, path), "description", "device", path);
  read_gemm(doc, top, path, b);
  read_memory(doc, top, path, b);
  const json& p2p = array(doc, "p2p", top, path);
  for (std::size_t i = 0; i < p2p.size(); ++i)
    b.pairs.push_back(read_pair(p2p[i], fmt::format("p2p[{}]", i), path, b.world));
  read_collectives(doc, top, path, b);
  if (b.gemm.empty())
    fail("{}: gemm is empty: nothing to fit the matrix-product efficiency on", path);
  if (b.memory.empty()) fail("{}: memory is empty: nothing to fit the memory efficiency on", path);
  return b;
}

std::vector<PairSample> pairs_across_hosts(const BenchData& bench) {
  auto across = [](const PairSample& p) { return !p.host_a.empty() && p.host_a != p.host_b; };
  if (std::none_of(bench.pairs.begin(), bench.pairs.end(), across)) return bench.pairs;
  std::vector<PairSample> out;
  std::copy_if(bench.pairs.begin(), bench.pairs.end(), std::back_inserter(out), across);
  return out;
}

BenchData read_bench(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("--bench {}: cannot read the file", path);
  const json doc = parse_json_strict(in, fmt::format("--bench {}", path));
  try {
    return parse_bench(doc, path);
  } catch (const json::exception& e) {
    fail("{}: a field has the wrong type: {}", path, e.what());
  }
}

namespace {

// The blocks a compute instruction's name spans ("blocks=BEGIN:END").
int named_blocks(const std::string& name, const std::string& path, const std::string& w) {
  static const std::regex blocks_re("blocks=(\\d+):(\\d+)");
  std::smatch m;
  if (!std::regex_search(name, m, blocks_re))
    fail("{}: {}.name '{}' has no blocks=BEGIN:END", path, w, name);
  const std::string what = fmt::format("{}: {}.name blocks", path, w);
  const int begin = strict_int(m.str(1), what, 0, INT_MAX),
            end = strict_int(m.str(2), what, 0, INT_MAX);
  if (end <= begin) fail("{}: blocks={}:{} is empty (END must exceed BEGIN)", what, begin, end);
  check_limit(what, end,
              Limit{2 * limits::layers.max + 2, "a model of the most layers has so many blocks"});
  return end - begin;
}

// The samples of one timed step: compute instructions, and per collective call (matched over
// ranks by name and occurrence) the span from its last member's start to its last end.
class StepSampler {
 public:
  StepSampler(int world, const std::string& path) : path_(path), seen_by_rank_(world) {
    s_.communication_s.assign(world, 0.0);
    s_.other_s.assign(world, 0.0);
  }

  void add(const InstructionRecord& item, const std::string& w) {
    const std::string& kind = item.kind;
    if (kind == "fwd" || kind == "bwd" || kind == "opt") {
      ComputeSample c{kind, item.rank, item.flops, item.bytes, 1, item.duration_s};
      if (kind != "opt") c.blocks = named_blocks(item.name, path_, w);
      s_.compute.push_back(c);
    } else if (kind == "load") {
      s_.other_s[item.rank] += item.duration_s;
    } else {
      s_.communication_s[item.rank] += item.duration_s;
      // A started collective (request >= 0) returns at once: its time is in its wait (kind
      // "wait", exposed communication), not a sample of the collective's own duration.
      if ((kind == "all_reduce" || kind == "reduce_scatter" || kind == "all_gather") &&
          item.request < 0)
        add_collective(item);
    }
  }

  StepSample finish(int step, double wall_s) {
    s_.step = step;
    s_.wall_s = wall_s;
    for (auto& call : s_.collectives)
      if (call.last_start_s >= 0) call.seconds = call.last_end_s - call.last_start_s;
    return std::move(s_);
  }

 private:
  void add_collective(const InstructionRecord& item) {
    const std::string& name = item.name;
    const double start = item.start_s, duration = item.duration_s;
    const std::string key = name + "#" + std::to_string(seen_by_rank_[item.rank][name]++);
    const auto [at, fresh] = call_of_.emplace(key, s_.collectives.size());
    if (fresh) {
      s_.collectives.push_back({item.kind, item.bytes, duration, 1, start, start + duration});
      return;
    }
    auto& call = s_.collectives[at->second];
    call.seconds = std::min(call.seconds, duration);
    call.last_start_s = std::max(call.last_start_s, start);
    call.last_end_s = std::max(call.last_end_s, start + duration);
    ++call.members;
  }

  const std::string& path_;
  StepSample s_;
  std::map<std::string, std::size_t> call_of_;  // "name#occurrence" -> index in collectives
  std::vector<std::map<std::string, int>> seen_by_rank_;  // name -> occurrences
};

}  // namespace

// The shared reader (plan/run_record_format.hpp) checks every line; here the timed steps become
// samples.
RunData read_run_record(const std::string& path) {
  const RunRecordFile record = read_run_record_file(path);
  RunData run;
  run.path = path;
  run.plan = to_string(record.header.plan);
  run.world = record.header.world;
  run.model = record.header.model.name;
  if (record.header_json.contains("model")) run.model_fields = record.header_json["model"];
  run.batch = record.header.batch;
  run.seq = record.header.seq;
  for (const StepLine& step : record.steps) {
    if (step.instructions.empty()) continue;  // not timed
    StepSampler sampler(run.world, path);
    for (std::size_t i = 0; i < step.instructions.size(); ++i)
      sampler.add(step.instructions[i],
                  fmt::format("step {} instructions[{}]", step.summary.step, i));
    run.steps.push_back(sampler.finish(step.summary.step, step.summary.wall_s));
  }
  if (run.steps.empty())
    fail("{}: no step carries instruction timings (record with fabtrain-exec train --record)",
         path);
  return run;
}

ModelSpec model_of(const json& fields, const std::string& name, const std::string& path) {
  ModelSpec model;
  try {
    model.name = name;
    auto whole = [&](const char* key) {
      return int(
          json_integer(fields.at(key), fmt::format("{}: model.{}", path, key), INT_MIN, INT_MAX));
    };
    model.n_layer = whole("layers");
    model.n_embd = whole("hidden");
    model.n_head = whole("heads");
    model.n_ctx = whole("context");
    model.vocab_size = whole("vocab");
  } catch (const json::exception& e) {
    fail("{}: model needs layers, hidden, heads, context and vocab: {}", path, e.what());
  }
  validate(model);
  return model;
}

}  // namespace fabtrain::calib
