#include "selector/search.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <queue>
#include <set>
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

std::vector<std::pair<std::string, int>> count_gpus_by(
    const Slice& slice, const std::vector<int>& gpus,
    const std::function<std::string(const SliceGpu&)>& key_of) {
  const auto all = slice.gpus();
  std::vector<std::pair<std::string, int>> groups;
  for (int g : gpus) {
    const std::string key = key_of(all[g]);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == key; });
    if (it == groups.end())
      groups.push_back({key, 1});
    else
      ++it->second;
  }
  return groups;
}

std::string describe_gpus(const Slice& slice, const std::vector<int>& gpus) {
  const auto groups = count_gpus_by(slice, gpus, [&](const SliceGpu& g) {
    return g.type->name + "@" + slice.vms[g.vm].site;
  });
  std::string out;
  for (auto& [key, n] : groups) out += fmt::format("{}{}x {}", out.empty() ? "" : " + ", n, key);
  return out;
}

SearchResult evaluate(const ModelSpec& model, const Slice& slice,
                      const std::vector<Candidate>& candidates, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int seq = options.space.seq > 0 ? options.space.seq : model.n_ctx;
  const int n = int(candidates.size());
  SearchResult out;
  out.enumerated = n;
  SlicePlatform& platform = SlicePlatform::of(slice);
  platform.configure(slice, options.calibration ? *options.calibration : Calibration{});

  // Seconds per token each candidate cannot beat, without compiling it (PlanFloor):
  // best first in this order, a candidate is compiled only when it might still win.
  const PlanFloor floor(model, slice, platform, seq, options.space.precision, options.calibration);
  std::vector<double> floor_per_token(n);
  // Costs per token in the objective's terms: seconds, or GPU-seconds for gpu-hours.
  auto weight = [&](const Candidate& c) { return objective_weight(options.objective, c.plan.ranks()); };
  for (int i = 0; i < n; ++i)
    floor_per_token[i] = floor.seconds_per_token(candidates[i]) * weight(candidates[i]);
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return floor_per_token[a] < floor_per_token[b]; });

  // What must stay exact: the best plan of every GPU set (keep_top = 0, for recommend), or the
  // keep_top fastest plans overall. A plan whose bound reaches the threshold cannot be either.
  std::map<std::vector<int>, double> best_per_set;  // seconds per token
  std::multiset<double> fastest;                    // the keep_top best seconds per token so far
  const bool global = options.keep_top > 0;
  auto threshold = [&](int i) {
    if (options.exhaustive) return 1e300;
    if (global) return int(fastest.size()) < options.keep_top ? 1e300 : *fastest.rbegin();
    const auto it = best_per_set.find(candidates[i].subset.gpus);
    return it == best_per_set.end() ? 1e300 : it->second;
  };

  // Memory, from the compiled schedule; cached, since a recompute=on candidate asks about its twin.
  std::map<int, Evaluated> checked;
  std::map<std::string, int> index_of;  // plan text + batch -> candidate index
  for (int i = 0; i < n; ++i)
    index_of.emplace(to_string(candidates[i].plan) + "/" + std::to_string(candidates[i].global_batch), i);
  std::vector<double> bound(n, 0);
  auto check_memory = [&](int i, Schedule* keep) -> const Evaluated& {
    auto it = checked.find(i);
    if (it != checked.end() && !keep) return it->second;
    const Candidate& c = candidates[i];
    Evaluated e;
    e.candidate = c;
    double floor_bytes = 0;
    if (const int r = floor.short_of_memory(c, &floor_bytes); r >= 0) {  // no need to compile
      const SliceGpu gpu = slice.gpus()[device_of(c.plan, r)];
      e.oom = true;
      e.peak_memory_bytes = floor_bytes;
      e.memory_capacity_bytes = gpu.type->memory_bytes;
      e.memory_rank = fmt::format("rank {} ({} at {})", r, gpu.type->name, slice.vms[gpu.vm].site);
      e.reason = fmt::format("{} needs at least {:.1f} GiB of {:.1f} GiB", e.memory_rank,
                             floor_bytes / GiB, e.memory_capacity_bytes / GiB);
      return checked.insert_or_assign(i, e).first->second;
    }
    Schedule schedule = compile(model, c.plan, c.global_batch, seq);
    ++out.compiled;
    const MemoryEstimate mem = estimate_memory(schedule, slice);
    const RankMemory& worst = mem.ranks[mem.worst_rank];
    e.peak_memory_bytes = worst.peak_bytes();
    e.memory_capacity_bytes = worst.capacity_bytes;
    e.memory_rank = memory_rank_name(worst);
    e.oom = mem.oom;
    if (mem.oom)
      e.reason = fmt::format("{} needs {:.1f} GiB of {:.1f} GiB", e.memory_rank,
                             worst.peak_bytes() / GiB, worst.capacity_bytes / GiB);
    if (keep) *keep = std::move(schedule);
    return checked.insert_or_assign(i, e).first->second;
  };
  // Compiles a candidate and decides: out of memory, a needless recompute twin, bounded, or to
  // be simulated (pushed on the queue by its full bound).
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  auto expand = [&](int i) {
    Schedule schedule;
    const Evaluated& e = check_memory(i, &schedule);
    if (e.oom) {
      out.out_of_memory.push_back(e);
      return;
    }
    const Candidate& c = candidates[i];
    if (c.plan.recompute && options.space.recompute_only_if_needed) {
      Plan twin = c.plan;
      twin.recompute = false;
      const auto it = index_of.find(to_string(twin) + "/" + std::to_string(c.global_batch));
      if (it != index_of.end() && !check_memory(it->second, nullptr).oom) {
        ++out.skipped_recompute;
        return;
      }
    }
    bound[i] = step_lower_bound(schedule, slice, platform, options.calibration) * weight(c) /
               (double(c.global_batch) * seq);
    if (bound[i] >= threshold(i)) {
      ++out.bounded;
      return;
    }
    queue.push({bound[i], i});
  };

  auto settle = [&](const WireResult& r) {
    Evaluated e = checked.at(r.index);
    if (!r.ok) {
      e.reason = r.error;
      out.failed.push_back(e);
      return;
    }
    e.step_time_s = r.step_time_s, e.tokens_per_s = r.tokens_per_s;
    e.tflops_per_gpu = r.tflops_per_gpu, e.mfu = r.mfu;
    e.compute_s = r.compute_s, e.exposed_comm_s = r.exposed_comm_s, e.bubble_s = r.bubble_s;
    if (options.train_tokens) e.time_to_train_s = *options.train_tokens / r.tokens_per_s;
    out.ranked.push_back(e);
    const double cost = weight(e.candidate) / r.tokens_per_s;
    double& best = best_per_set.try_emplace(e.candidate.subset.gpus, 1e300).first->second;
    best = std::min(best, cost);
    fastest.insert(cost);
    if (global && int(fastest.size()) > options.keep_top) fastest.erase(std::prev(fastest.end()));
  };

  // The next candidate to simulate: the least full bound of all, so expand every candidate whose
  // floor (never above its full bound) is below the queue's least; -1 when nothing can win.
  size_t next = 0;
  auto next_to_simulate = [&]() -> int {
    for (;;) {
      while (next < order.size() && (queue.empty() || floor_per_token[order[next]] < queue.top().first)) {
        const int i = order[next];
        if (floor_per_token[i] >= threshold(i)) {
          if (global) {  // sorted by floor: no later candidate can win either
            out.bounded += int(order.size() - next);
            next = order.size();
            break;
          }
          ++out.bounded, ++next;
          continue;
        }
        ++next;
        expand(i);
      }
      if (queue.empty()) return -1;
      const auto [b, i] = queue.top();
      queue.pop();
      if (b < threshold(i)) return i;
      ++out.bounded;
      if (global) {  // the least bound left cannot win: neither can the rest
        out.bounded += int(queue.size() + order.size() - next);
        while (!queue.empty()) queue.pop();
        next = order.size();
        return -1;
      }
    }
  };

  int workers = options.workers > 0 ? options.workers : int(std::thread::hardware_concurrency());
  workers = std::max(1, std::min<int>(workers, n));
  if (n > 0) {
    WorkerPool pool(workers, model, slice, candidates, seq, options.calibration);
    std::vector<int> busy(pool.size(), 0);
    // Plans are decided in waves of a fixed size: a wave is chosen against the results of the
    // waves before it only, so what is simulated never depends on timing or the worker count.
    // (A bound only tightens as results settle, so choosing early never skips a winner.)
    constexpr std::size_t kWave = 8;
    for (;;) {
      std::vector<int> wave;
      while (wave.size() < kWave) {
        const int i = next_to_simulate();
        if (i < 0) break;
        wave.push_back(i);
      }
      if (wave.empty()) break;
      std::map<int, WireResult> results;
      std::size_t sent = 0;
      int running = 0;
      auto dispatch = [&](int w) {
        if (sent == wave.size()) return;
        pool.send(w, wave[sent++]);
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
  std::sort(out.ranked.begin(), out.ranked.end(), [&](const Evaluated& a, const Evaluated& b) {
    const double ca = weight(a.candidate) / a.tokens_per_s, cb = weight(b.candidate) / b.tokens_per_s;
    if (ca != cb) return ca < cb;
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
