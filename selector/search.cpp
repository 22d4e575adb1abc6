#include "selector/search.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "common/error.hpp"
#include "selector/lower_bound.hpp"
#include "selector/worker_pool.hpp"
#include "sim/memory.hpp"
#include "sim/slice_platform.hpp"

namespace fabtrain {
namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

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
      fits_without_recompute[to_string(candidates[i].plan) +
                             std::to_string(candidates[i].global_batch)] = fits[i];
  std::vector<int> todo;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!fits[i]) {
      out.out_of_memory.push_back(evaluated[i]);
      continue;
    }
    if (candidates[i].plan.recompute && options.space.recompute_only_if_needed) {
      Plan twin = candidates[i].plan;
      twin.recompute = false;
      auto it =
          fits_without_recompute.find(to_string(twin) + std::to_string(candidates[i].global_batch));
      if (it != fits_without_recompute.end() && it->second) {
        ++out.skipped_recompute;
        continue;
      }
    }
    todo.push_back(int(i));
  }

  // Branch and bound: simulate in order of the compute lower bound per token, and skip a plan
  // whose bound cannot beat the best throughput already found on the same GPUs (so the best
  // plan of every GPU set, which `recommend` needs, is never skipped).
  std::vector<double> bound(candidates.size(), 0);
  SlicePlatform& platform = SlicePlatform::of(slice);
  platform.configure(slice, options.calibration ? *options.calibration : Calibration{});
  for (int i : todo)
    bound[i] = step_lower_bound(schedules[i], slice, platform, options.calibration) /
               (double(candidates[i].global_batch) * seq);
  std::stable_sort(todo.begin(), todo.end(), [&](int a, int b) { return bound[a] < bound[b]; });
  std::map<std::vector<int>, double> best_per_token;  // by GPU set: seconds per token
  auto settle = [&](const WireResult& r) {
    Evaluated& e = evaluated[r.index];
    if (!r.ok) {
      e.reason = r.error;
      out.failed.push_back(e);
      return;
    }
    e.step_time_s = r.step_time_s, e.tokens_per_s = r.tokens_per_s;
    e.tflops_per_gpu = r.tflops_per_gpu, e.mfu = r.mfu;
    if (options.train_tokens) e.time_to_train_s = *options.train_tokens / r.tokens_per_s;
    out.ranked.push_back(e);
    double& best = best_per_token.try_emplace(e.candidate.subset.gpus, 1e300).first->second;
    best = std::min(best, 1 / r.tokens_per_s);
  };
  int workers = options.workers > 0 ? options.workers : int(std::thread::hardware_concurrency());
  workers = std::max(1, std::min<int>(workers, int(todo.size())));
  if (!todo.empty()) {
    WorkerPool pool(workers, model, slice, schedules, options.calibration);
    std::vector<int> busy(pool.size(), 0);
    // Plans are decided in waves of a fixed size: a wave is pruned against the results of the
    // waves before it only, so what is skipped never depends on timing or the worker count.
    constexpr std::size_t kWave = 8;
    for (std::size_t first = 0; first < todo.size(); first += kWave) {
      std::vector<int> wave;
      for (std::size_t k = first; k < std::min(todo.size(), first + kWave); ++k) {
        const int i = todo[k];
        auto it = best_per_token.find(candidates[i].subset.gpus);
        if (!options.exhaustive && it != best_per_token.end() && bound[i] >= it->second) {
          ++out.bounded;
          continue;
        }
        wave.push_back(i);
      }
      std::map<int, WireResult> results;
      std::size_t next = 0;
      int running = 0;
      auto dispatch = [&](int w) {
        if (next == wave.size()) return;
        pool.send(w, wave[next++]);
        busy[w] = 1, ++running;
      };
      for (int w = 0; w < pool.size(); ++w) dispatch(w);
      while (running > 0) {
        const int w = pool.wait_any(busy);
        const WireResult r = pool.receive(w);
        results[r.index] = r;
        busy[w] = 0, --running;
        dispatch(w);
      }
      for (int i : wave) settle(results.at(i));  // in the wave's order, not the finishing order
    }
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
