// The progress-mode bench (see overlap_bench.hpp).
#include "exec/measure/overlap_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/error.hpp"

namespace fabtrain {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One block of work: passes of a multiply-add over a buffer larger than the caches.
struct Kernel {
  std::vector<float> a = std::vector<float>(std::size_t(4) << 20, 1.0f);
  std::vector<float> b = std::vector<float>(std::size_t(4) << 20, 0.5f);
  int passes = 1;
  void run() {
    for (int p = 0; p < passes; ++p)
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = a[i] * 0.999f + b[i];
  }
};

}  // namespace

OverlapBenchResult run_overlap_bench(const OverlapBenchConfig& c, MpiCommunicator& comm) {
  if (c.mib <= 0 || c.blocks < 1 || c.block_ms <= 0 || c.repeats < 1)
    fail("overlap bench: --mib {}, --blocks {}, --block-ms {} and --repeats {} must be positive",
         c.mib, c.blocks, c.block_ms, c.repeats);
  const MpiProgress before = comm.progress_mode();
  comm.set_groups({[&] {
    std::vector<int> all(comm.size());
    for (int r = 0; r < comm.size(); ++r) all[r] = r;
    return all;
  }()});
  std::vector<float> data(std::size_t(c.mib * (1 << 20) / 4), 1.0f);
  Kernel kernel;
  {  // size a block: passes so one block takes about block_ms here, the same on every rank
    const Clock::time_point t = Clock::now();
    kernel.run();
    float passes[1] = {float(std::max(1.0, c.block_ms / 1e3 / since(t)))};
    comm.all_reduce(0, std::span<float>(passes, 1));
    kernel.passes = std::max(1, int(passes[0] / float(comm.size())));
  }
  auto slowest = [&](double x) {  // the largest over ranks
    std::vector<float> all(comm.size(), 0.0f), mine = {float(x)};
    comm.all_gather(0, mine, all);
    return double(*std::max_element(all.begin(), all.end()));
  };
  OverlapBenchResult result;
  std::vector<double> comm_alone, compute_alone;
  for (int k = 0; k < c.repeats; ++k) {
    comm.barrier();
    Clock::time_point t = Clock::now();
    comm.all_reduce(0, data);
    comm_alone.push_back(slowest(since(t)));
    comm.barrier();
    t = Clock::now();
    for (int b = 0; b < c.blocks; ++b) kernel.run();
    compute_alone.push_back(slowest(since(t)));
  }
  result.comm_alone_s = median(comm_alone);
  result.compute_alone_s = median(compute_alone);
  std::vector<std::pair<std::string, int>> cases;
  for (const std::string& name : c.modes)
    if (name == "thread")
      for (int us : c.poll_us) cases.push_back({name, us});
    else
      cases.push_back({name, 500});
  for (const auto& [name, us] : cases) {
    comm.set_progress(parse_mpi_progress(name), us);
    std::vector<double> exposed, compute, total;
    for (int k = 0; k < c.repeats; ++k) {
      comm.barrier();
      const Clock::time_point t = Clock::now();
      const int request = comm.start_all_reduce(0, data);
      for (int b = 0; b < c.blocks; ++b) {
        kernel.run();
        comm.progress();
      }
      const double computed = since(t);
      const Clock::time_point w = Clock::now();
      comm.wait(request);
      exposed.push_back(slowest(since(w)));
      compute.push_back(slowest(computed));
      total.push_back(slowest(since(t)));
    }
    const std::string label = name == "thread" ? fmt::format("thread/{}us", us) : name;
    result.rows.push_back({label, median(exposed), median(compute), median(total)});
  }
  comm.set_progress(before);
  return result;
}

std::string overlap_bench_table(const OverlapBenchConfig& c, const OverlapBenchResult& r) {
  std::string out = fmt::format(
      "overlap bench: all-reduce of {:g} MiB behind {} blocks of compute, medians of {} repeats "
      "(slowest rank)\n  all-reduce alone {:.1f} ms, compute alone {:.1f} ms\n"
      "  {:<13} {:>12} {:>12} {:>12} {:>10}\n",
      c.mib, c.blocks, c.repeats, 1e3 * r.comm_alone_s, 1e3 * r.compute_alone_s, "progress",
      "exposed ms", "compute ms", "total ms", "hidden");
  for (const OverlapBenchRow& row : r.rows)
    out += fmt::format("  {:<13} {:>12.1f} {:>12.1f} {:>12.1f} {:>9.0f}%\n", row.mode,
                       1e3 * row.exposed_s, 1e3 * row.compute_s, 1e3 * row.total_s,
                       100 * (r.comm_alone_s + r.compute_alone_s - row.total_s) /
                           std::max(1e-12, std::min(r.comm_alone_s, r.compute_alone_s)));
  return out;
}

}  // namespace fabtrain
