// Running the measurements and gathering them on rank 0 (see bench_run.hpp).
#include "exec/measure/bench_run.hpp"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "common/error.hpp"
#include "common/host_info.hpp"
#include "exec/comm/mpi_check.hpp"
#include "exec/measure/bench_compute.hpp"
#include "exec/measure/bench_network.hpp"
#include "exec/model/trainable_model.hpp"
#include "models/model_spec.hpp"
#include "plan/plan.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {
namespace {

// The same rule as training (exec/run/trainer.cpp), so the bench loads the machine as a run does.
int threads_for(const BenchConfig& config, const MpiCommunicator& comm) {
  if (config.threads > 0) return config.threads;
  if (std::getenv("OMP_NUM_THREADS")) return omp_get_max_threads();
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, comm.local_size()));
}

// Each rank's values, on rank 0 (rank-major).
std::vector<double> gather(const std::vector<double>& mine, int ranks) {
  std::vector<double> all(mine.size() * ranks);
  MPI_CHECK(MPI_Gather(mine.data(), int(mine.size()), MPI_DOUBLE, all.data(), int(mine.size()),
                       MPI_DOUBLE, 0, MPI_COMM_WORLD));
  return all;
}

std::vector<std::string> gather_hosts(const std::string& host, int ranks) {
  constexpr int width = 256;
  std::vector<char> mine(width, 0), all(std::size_t(width) * ranks, 0);
  std::copy_n(host.begin(), std::min<std::size_t>(host.size(), width - 1), mine.begin());
  MPI_CHECK(
      MPI_Gather(mine.data(), width, MPI_CHAR, all.data(), width, MPI_CHAR, 0, MPI_COMM_WORLD));
  std::vector<std::string> hosts;
  for (int r = 0; r < ranks; ++r) hosts.emplace_back(all.data() + std::size_t(r) * width);
  return hosts;
}

void validate(const BenchConfig& c) {
  if (c.device != "cpu")
    fail(
        "--device {}: only the cpu backend is built here (the CUDA bench comes with the CUDA "
        "backend)",
        c.device);
  if (c.batch < 1) fail("--batch {} must be at least 1", c.batch);
  if (c.seq < 1) fail("--seq {} must be at least 1", c.seq);
  if (!(c.budget_s > 0 && c.budget_s <= 60)) fail("--budget-s {} must be in (0, 60]", c.budget_s);
  if (!(c.memory_mib > 0)) fail("--memory-mib {} must be positive", c.memory_mib);
  if (!(c.p2p_mib > 0)) fail("--p2p-mib {} must be positive", c.p2p_mib);
  if (c.p2p_messages < 1) fail("--p2p-messages {} must be at least 1", c.p2p_messages);
  if (c.tcp_streams < 0) fail("--tcp-streams {} must be zero (off) or positive", c.tcp_streams);
  if (!(c.tcp_mib > 0)) fail("--tcp-mib {} must be positive", c.tcp_mib);
  if (!(c.latency_bytes >= 1)) fail("--latency-bytes {} must be at least 1", c.latency_bytes);
  for (double b : c.message_bytes)
    if (!(b >= 1)) fail("--message-bytes {} must be at least 1", b);
  for (double s : c.collective_mib)
    if (!(s > 0)) fail("--collective-mib {} must be positive", s);
  if (!c.plan.empty()) parse_plan(c.plan);  // a clear error before any measuring
}

// The groups the bench measures collectives over: group 0 is the world (the bench's own
// agreements run on it), then the plan's groups as its schedule has them.
struct BenchGroups {
  std::vector<std::vector<int>> groups;
  std::vector<GroupKind> kinds;
  std::map<GroupKind, int> mine;  // this rank's group of each of the plan's kinds it is in
};

BenchGroups bench_groups(const BenchConfig& config, const ModelSpec& model, int n, int rank) {
  std::vector<int> world(n);
  for (int r = 0; r < n; ++r) world[r] = r;
  BenchGroups out{{world}, {GroupKind::world}, {}};
  if (config.plan.empty()) return out;
  const Plan plan = parse_plan(config.plan);
  if (plan.ranks() != n)
    fail("--plan {} needs {} ranks; the bench runs on {}", config.plan, plan.ranks(), n);
  const Schedule s = compile(model, plan, config.batch * plan.dp * plan.mb, config.seq);
  out.groups.insert(out.groups.end(), s.groups.begin(), s.groups.end());
  out.kinds.insert(out.kinds.end(), s.group_kinds.begin(), s.group_kinds.end());
  for (GroupKind kind : {GroupKind::tp, GroupKind::dp, GroupKind::tied_embedding})
    if (const int g = s.group_of(rank, kind); g >= 0) out.mine[kind] = 1 + g;
  return out;
}

bench::NetworkOptions network_options(const BenchConfig& config, const ModelSpec& model) {
  bench::NetworkOptions net;
  net.latency_bytes = config.latency_bytes;
  net.message_latency_bytes = {double(config.batch) * config.seq * model.n_embd * sizeof(float)};
  for (double b : config.message_bytes) net.message_latency_bytes.push_back(b);
  net.message_bytes = config.p2p_mib * (1 << 20);
  net.messages = config.p2p_messages;
  net.budget_s = 3 * config.budget_s;
  net.tcp_streams = config.tcp_streams;
  net.tcp_bytes = config.tcp_mib * (1 << 20);
  return net;
}

// Collectives over the world, then over each kind of the plan's groups (every rank takes part in
// each measurement; `mine` is -1 where it is in no group of the kind).
std::vector<bench::CollectiveResult> measure_all_collectives(MpiCommunicator& comm,
                                                             const BenchConfig& config,
                                                             const BenchGroups& groups,
                                                             const bench::NetworkOptions& net) {
  std::vector<double> sizes;
  for (double mib : config.collective_mib) sizes.push_back(mib * (1 << 20));
  std::vector<bench::CollectiveResult> collectives =
      bench::measure_collectives(comm, "world", 0, comm.size(), sizes, net);
  for (GroupKind kind : {GroupKind::tp, GroupKind::dp, GroupKind::tied_embedding}) {
    int size = 0;  // every group of a kind has the same size
    for (std::size_t g = 0; g < groups.groups.size(); ++g)
      if (groups.kinds[g] == kind) size = int(groups.groups[g].size());
    const int mine = groups.mine.count(kind) ? groups.mine.at(kind) : -1;
    const auto more = bench::measure_collectives(comm, to_string(kind), mine, size, sizes, net);
    collectives.insert(collectives.end(), more.begin(), more.end());
  }
  return collectives;
}

using nlohmann::json;

json header_json(const BenchConfig& config, const ModelSpec& model, int n,
                 const std::vector<std::string>& hosts, int threads, const MpiCommunicator& comm) {
  return {{"format", "fabtrain-bench"},
          {"version", kBenchFormatVersion},
          {"model",
           {{"name", model.name},
            {"layers", model.n_layer},
            {"hidden", model.n_embd},
            {"heads", model.n_head},
            {"context", model.n_ctx},
            {"vocab", model.vocab_size}}},
          {"batch", config.batch},
          {"seq", config.seq},
          {"world", n},
          {"hosts", hosts},
          {"device",
           {{"kind", config.device},
            {"description", cpu_model()},
            {"cores", std::thread::hardware_concurrency()}}},
          {"threads", threads},
          {"mpi", comm.library_version()}};
}

// all_seconds: rank-major, shapes.size() per rank.
json gemm_json(const std::vector<bench::GemmShape>& shapes, const std::vector<double>& all_seconds,
               int n) {
  json gemm = json::array();
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    json per_rank = json::array();
    for (int r = 0; r < n; ++r) {
      const double s = all_seconds[std::size_t(r) * shapes.size() + i];
      per_rank.push_back(
          {{"rank", r}, {"seconds", s}, {"flops_per_s", s > 0 ? shapes[i].flops() / s : 0}});
    }
    gemm.push_back({{"name", shapes[i].name},
                    {"pass", shapes[i].pass},
                    {"m", shapes[i].m},
                    {"n", shapes[i].n},
                    {"k", shapes[i].k},
                    {"flops", shapes[i].flops()},
                    {"ranks", per_rank}});
  }
  return gemm;
}

// all_seconds: rank-major, memory.size() per rank.
json memory_json(const std::vector<bench::MemoryResult>& memory,
                 const std::vector<double>& all_seconds, int n) {
  json mem = json::array();
  for (std::size_t i = 0; i < memory.size(); ++i) {
    json per_rank = json::array();
    for (int r = 0; r < n; ++r) {
      const double s = all_seconds[std::size_t(r) * memory.size() + i];
      per_rank.push_back(
          {{"rank", r}, {"seconds", s}, {"bytes_per_s", s > 0 ? memory[i].bytes / s : 0}});
    }
    mem.push_back({{"kernel", memory[i].kernel}, {"bytes", memory[i].bytes}, {"ranks", per_rank}});
  }
  return mem;
}

json p2p_json(const std::vector<bench::PairResult>& pairs, const std::vector<std::string>& hosts,
              const BenchConfig& config) {
  json p2p = json::array();
  for (const auto& p : pairs) {
    json latencies = json::array();
    for (const auto& [bytes, seconds] : p.message_latencies)
      latencies.push_back({{"bytes", bytes}, {"one_way_s", seconds}});
    p2p.push_back({{"a", p.a},
                   {"b", p.b},
                   {"host_a", hosts[p.a]},
                   {"host_b", hosts[p.b]},
                   {"rtt_s", p.rtt_s},
                   {"latency_s", p.latency_s},
                   {"latency_bytes", config.latency_bytes},
                   {"message_bytes", p.message_bytes},
                   {"messages", p.messages},
                   {"stream_s", p.stream_s},
                   {"bandwidth", p.bandwidth},
                   {"message_latencies", latencies},
                   {"rtt_p90_s", p.rtt_p90_s}});
    if (config.tcp_streams > 0) {
      p2p.back()["tcp_streams"] = config.tcp_streams;
      p2p.back()["tcp_bandwidth_one_stream"] = p.tcp_one_stream;
      p2p.back()["tcp_bandwidth"] = p.tcp_streams;
    }
  }
  return p2p;
}

json collectives_json(const std::vector<bench::CollectiveResult>& collectives) {
  json coll = json::array();
  for (const auto& c : collectives)
    coll.push_back({{"op", c.op},
                    {"group", c.group},
                    {"bytes", c.bytes},
                    {"ranks", c.ranks},
                    {"seconds", c.seconds},
                    {"algbw", c.algbw},
                    {"busbw", c.busbw}});
  return coll;
}

}  // namespace

nlohmann::json run_bench(const BenchConfig& config, MpiCommunicator& comm) {
  validate(config);
  const ModelSpec model = load_trainable_model(config.model, "bench");
  validate(model);
  const int threads = threads_for(config, comm);
  omp_set_num_threads(threads);
  const int n = comm.size();
  const bool root = comm.rank() == 0;
  const BenchGroups groups = bench_groups(config, model, n, comm.rank());
  comm.set_groups(groups.groups);
  if (root)
    fmt::print(config.text,
               "fabtrain-exec bench: {} (L={} C={} V={}), B={} T={}, {} ranks, {} threads each\n",
               model.name, model.n_layer, model.n_embd, model.vocab_size, config.batch, config.seq,
               n, threads);

  bench::Repetitions reps{3, 20, config.budget_s};
  const auto shapes = bench::gpt2_gemm_shapes(model, config.batch * config.seq);
  std::vector<double> gemm_seconds;
  comm.barrier();
  for (const auto& s : shapes) gemm_seconds.push_back(bench::measure_gemm(s, reps).seconds);
  comm.barrier();
  const auto memory = bench::measure_memory(config.memory_mib * (1 << 20), model.n_embd, reps);
  std::vector<double> memory_seconds;
  for (const auto& m : memory) memory_seconds.push_back(m.seconds);
  const auto all_gemm = gather(gemm_seconds, n);
  const auto all_memory = gather(memory_seconds, n);
  const auto hosts = gather_hosts(comm.host(), n);
  if (root) fmt::print(config.text, "  compute measured; network next\n");

  const bench::NetworkOptions net = network_options(config, model);
  const auto pairs = bench::measure_pairs(comm, net);
  const auto collectives = measure_all_collectives(comm, config, groups, net);
  if (!root) return {};

  json doc = header_json(config, model, n, hosts, threads, comm);
  doc["gemm"] = gemm_json(shapes, all_gemm, n);
  doc["memory"] = memory_json(memory, all_memory, n);
  doc["p2p"] = p2p_json(pairs, hosts, config);
  doc["collectives"] = collectives_json(collectives);
  return doc;
}

}  // namespace fabtrain
