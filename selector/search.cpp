#include "selector/search.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "common/error.hpp"
#include "sim/memory.hpp"
#include "sim/simulator.hpp"

namespace fabtrain {
namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

// The few numbers a worker sends back per simulated candidate.
struct WireResult {
  int index = 0;
  int ok = 0;
  double step_time_s = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  char error[200] = {};
};

void write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n <= 0) _exit(3);
    p += n, size -= size_t(n);
  }
}

WireResult simulate_one(Simulator& sim, const ModelSpec& model, const Schedule& schedule,
                        const SearchOptions& options, int index) {
  WireResult w;
  w.index = index;
  try {
    SimOptions so;
    so.calibration = options.calibration;
    const SimResult r = sim.run(model, schedule, so);
    w.ok = 1;
    w.step_time_s = r.step_time_s, w.tokens_per_s = r.tokens_per_s;
    w.tflops_per_gpu = r.tflops_per_gpu, w.mfu = r.mfu;
  } catch (const std::exception& e) {
    std::strncpy(w.error, e.what(), sizeof w.error - 1);
  }
  return w;
}

// Simulates schedules[i] for every i in todo on `workers` forked processes (copy-on-write: the
// compiled schedules are shared), each reusing one Simulator; results come back over pipes.
std::vector<WireResult> simulate_all(const ModelSpec& model, const Slice& slice,
                                     const std::vector<Schedule>& schedules,
                                     const std::vector<int>& todo, const SearchOptions& options) {
  int workers = options.workers > 0 ? options.workers : int(std::thread::hardware_concurrency());
  workers = std::max(1, std::min<int>(workers, int(todo.size())));
  std::vector<WireResult> results;
  if (todo.empty()) return results;
  if (workers == 1) {
    Simulator sim(slice);
    for (int i : todo) results.push_back(simulate_one(sim, model, schedules[i], options, i));
    return results;
  }
  std::vector<int> read_ends;
  std::vector<pid_t> pids;
  for (int w = 0; w < workers; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) fail("cannot create a pipe for search workers: {}", std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) fail("cannot fork search workers: {}", std::strerror(errno));
    if (pid == 0) {
      ::close(fds[0]);
      Simulator sim(slice);
      for (size_t k = w; k < todo.size(); k += workers) {
        const WireResult r = simulate_one(sim, model, schedules[todo[k]], options, todo[k]);
        write_all(fds[1], &r, sizeof r);
      }
      ::close(fds[1]);
      _exit(0);
    }
    ::close(fds[1]);
    read_ends.push_back(fds[0]);
    pids.push_back(pid);
  }
  for (int fd : read_ends) {
    WireResult r;
    for (;;) {
      size_t got = 0;
      while (got < sizeof r) {
        ssize_t n = ::read(fd, reinterpret_cast<char*>(&r) + got, sizeof r - got);
        if (n <= 0) break;
        got += size_t(n);
      }
      if (got < sizeof r) break;
      results.push_back(r);
    }
    ::close(fd);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail("a search worker died (status {}); rerun with --workers 1 to see why", status);
  }
  if (results.size() != todo.size())
    fail("search workers returned {} of {} results", results.size(), todo.size());
  return results;
}

std::string memory_rank_name(const RankMemory& r) {
  return fmt::format("rank {} ({} at {})", r.rank, r.gpu_type, r.site);
}

}  // namespace

std::string describe_gpus(const Slice& slice, const std::vector<int>& gpus) {
  const auto all = slice.gpus();
  // count per (type, site) in order of first appearance
  std::vector<std::pair<std::string, int>> groups;
  for (int g : gpus) {
    const std::string key = all[g].type->name + "@" + slice.vms[all[g].vm].site;
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == key; });
    if (it == groups.end())
      groups.push_back({key, 1});
    else
      ++it->second;
  }
  std::string out;
  for (auto& [key, n] : groups) out += fmt::format("{}{}x {}", out.empty() ? "" : " + ", n, key);
  return out;
}

SearchResult evaluate(const ModelSpec& model, const Slice& slice,
                      const std::vector<Candidate>& candidates, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int seq = options.space.seq > 0 ? options.space.seq : model.n_ctx;
  SearchResult out;
  out.enumerated = int(candidates.size());

  std::vector<Schedule> schedules(candidates.size());
  std::vector<Evaluated> evaluated(candidates.size());
  std::vector<char> fits(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    Evaluated& e = evaluated[i];
    e.candidate = c;
    schedules[i] = compile(model, c.plan, c.global_batch, seq);
    const MemoryEstimate mem = estimate_memory(schedules[i], slice);
    const RankMemory& worst = mem.ranks[mem.worst_rank];
    e.peak_memory_bytes = worst.peak_bytes();
    e.memory_capacity_bytes = worst.capacity_bytes;
    e.memory_rank = memory_rank_name(worst);
    e.oom = mem.oom;
    if (mem.oom)
      e.reason = fmt::format("{} needs {:.1f} GiB of {:.1f} GiB", e.memory_rank,
                             worst.peak_bytes() / GiB, worst.capacity_bytes / GiB);
    fits[i] = !mem.oom;
  }

  // Recomputation only costs time; keep recompute=on only where its twin does not fit.
  std::map<std::string, bool> fits_without_recompute;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (!candidates[i].plan.recompute)
      fits_without_recompute[to_string(candidates[i].plan) + std::to_string(candidates[i].global_batch)] =
          fits[i];
  std::vector<int> todo;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!fits[i]) {
      out.out_of_memory.push_back(evaluated[i]);
      continue;
    }
    if (candidates[i].plan.recompute && options.space.recompute_only_if_needed) {
      Plan twin = candidates[i].plan;
      twin.recompute = false;
      auto it = fits_without_recompute.find(to_string(twin) + std::to_string(candidates[i].global_batch));
      if (it != fits_without_recompute.end() && it->second) {
        ++out.skipped_recompute;
        continue;
      }
    }
    todo.push_back(int(i));
  }

  for (const WireResult& r : simulate_all(model, slice, schedules, todo, options)) {
    Evaluated& e = evaluated[r.index];
    if (!r.ok) {
      e.reason = r.error;
      out.failed.push_back(e);
      continue;
    }
    e.step_time_s = r.step_time_s, e.tokens_per_s = r.tokens_per_s;
    e.tflops_per_gpu = r.tflops_per_gpu, e.mfu = r.mfu;
    if (options.train_tokens) e.time_to_train_s = *options.train_tokens / r.tokens_per_s;
    out.ranked.push_back(e);
  }
  std::sort(out.ranked.begin(), out.ranked.end(), [](const Evaluated& a, const Evaluated& b) {
    if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
    if (a.candidate.plan.ranks() != b.candidate.plan.ranks())
      return a.candidate.plan.ranks() < b.candidate.plan.ranks();
    return to_string(a.candidate.plan) < to_string(b.candidate.plan);
  });
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

SearchResult search(const ModelSpec& model, const Slice& slice, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto candidates = enumerate_plans(model, slice, options.space);
  SearchResult result = evaluate(model, slice, candidates, options);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace fabtrain
