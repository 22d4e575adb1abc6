// The best-first, bounded search over the enumerated plans (see search.hpp).
#include "selector/search.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <queue>
#include <set>

#include "common/error.hpp"
#include "sim/lower_bound.hpp"
#include "sim/memory.hpp"
#include "sim/sim_pool.hpp"

namespace fabtrain {
namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

std::string memory_rank_name(const RankMemory& r) {
  return fmt::format("rank {} ({} at {})", r.rank, r.gpu_type, r.site);
}

}  // namespace

double ranking_cost(const Evaluated& e, double cost, const SearchOptions& options) {
  return e.tight ? cost * (1 + options.tight_tolerance) : cost;
}

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
  const auto groups = count_gpus_by(
      slice, gpus, [&](const SliceGpu& g) { return g.type->name + "@" + slice.vms[g.vm].site; });
  std::string out;
  for (auto& [key, n] : groups) out += fmt::format("{}{}x {}", out.empty() ? "" : " + ", n, key);
  return out;
}

namespace {

// One evaluation's state: the candidates in floor order, what is known of each, the queue of
// compiled candidates by full bound, and what must stay exact. Phases: order by floor; expand
// candidates (memory, recompute twin, bound) best first; simulate in waves; rank.
class Evaluation {
 public:
  Evaluation(const ModelSpec& model, const Slice& slice, const std::vector<Candidate>& candidates,
             const SearchOptions& options, SearchResult& out)
      : model_(model),
        slice_(slice),
        candidates_(candidates),
        options_(options),
        out_(out),
        seq_(options.space.seq > 0 ? options.space.seq : model.n_ctx),
        n_(int(candidates.size())),
        pool_(slice, options.calibration, options.workers),
        floor_(pool_.plan_floor(model, seq_, options.space.precision)),
        global_(options.keep_top > 0) {
    for (int i = 0; i < n_; ++i)
      index_of_.emplace(key_of(candidates[i].plan, candidates[i].global_batch), i);
  }

  void run() {
    order_by_floor();
    simulate_waves();
  }

 private:
  // Costs per token in the objective's terms: seconds, or GPU-seconds for gpu-hours.
  double weight(const Candidate& c) const {
    return objective_weight(options_.objective, c.plan.ranks());
  }

  static std::string key_of(const Plan& plan, int global_batch) {
    return to_string(plan) + "/" + std::to_string(global_batch);
  }

  // Seconds per token each candidate cannot beat, without compiling it (PlanFloor): best first
  // in this order, a candidate is compiled only when it might still win.
  void order_by_floor() {
    floor_per_token_.resize(n_);
    for (int i = 0; i < n_; ++i)
      floor_per_token_[i] =
          floor_.seconds_per_token(candidates_[i].plan, candidates_[i].global_batch) *
          weight(candidates_[i]);
    order_.resize(n_);
    for (int i = 0; i < n_; ++i) order_[i] = i;
    std::stable_sort(order_.begin(), order_.end(),
                     [&](int a, int b) { return floor_per_token_[a] < floor_per_token_[b]; });
  }

  // What must stay exact: the best plan of every GPU set (keep_top = 0, for recommend), or the
  // keep_top fastest plans overall. A plan whose bound reaches the threshold cannot be either.
  double threshold(int i) const {
    if (options_.exhaustive) return 1e300;
    if (global_) return int(fastest_.size()) < options_.keep_top ? 1e300 : *fastest_.rbegin();
    const auto it = best_per_set_.find(candidates_[i].subset.gpus);
    return it == best_per_set_.end() ? 1e300 : it->second;
  }

  // Out of memory by the plan floor alone: no need to compile.
  Evaluated floor_out_of_memory(const Candidate& c, int rank, double floor_bytes) const {
    Evaluated e;
    e.candidate = c;
    const SliceGpu gpu = slice_.gpus()[device_of(c.plan, rank)];
    e.oom = true;
    e.peak_memory_bytes = floor_bytes;
    e.memory_capacity_bytes = gpu.type->memory_bytes;
    e.memory_rank =
        fmt::format("rank {} ({} at {})", rank, gpu.type->name, slice_.vms[gpu.vm].site);
    e.reason = fmt::format("{} needs at least {:.1f} GiB of {:.1f} GiB", e.memory_rank,
                           floor_bytes / GiB, e.memory_capacity_bytes / GiB);
    return e;
  }

  // Memory, from the compiled schedule; cached, since a recompute=on candidate asks about its
  // twin. With `keep`, the compiled schedule is kept there.
  const Evaluated& check_memory(int i, Schedule* keep) {
    auto it = checked_.find(i);
    if (it != checked_.end() && !keep) return it->second;
    const Candidate& c = candidates_[i];
    double floor_bytes = 0;
    if (const int r = floor_.short_of_memory(c.plan, c.global_batch, &floor_bytes); r >= 0)
      return checked_.insert_or_assign(i, floor_out_of_memory(c, r, floor_bytes)).first->second;
    Evaluated e;
    e.candidate = c;
    Schedule schedule = compile(model_, c.plan, c.global_batch, seq_);
    ++out_.compiled;
    const MemoryEstimate mem = estimate_memory(schedule, slice_);
    const RankMemory& worst = mem.ranks[mem.worst_rank];
    e.peak_memory_bytes = worst.peak_bytes();
    e.memory_capacity_bytes = worst.capacity_bytes;
    e.memory_rank = memory_rank_name(worst);
    e.oom = mem.oom;
    e.free_fraction = least_free_fraction(mem);
    e.tight = !mem.oom && e.free_fraction < options_.memory_headroom;
    if (mem.oom)
      e.reason = fmt::format("{} needs {:.1f} GiB of {:.1f} GiB", e.memory_rank,
                             worst.peak_bytes() / GiB, worst.capacity_bytes / GiB);
    if (keep) *keep = std::move(schedule);
    return checked_.insert_or_assign(i, e).first->second;
  }

  static bool fits_with_headroom(const Evaluated& e) { return !e.oom && !e.tight; }

  // A recompute=on candidate whose recompute=off twin fits (with headroom) is not worth
  // simulating.
  bool needless_recompute(const Candidate& c) {
    if (!c.plan.recompute || !options_.space.recompute_only_if_needed) return false;
    Plan twin = c.plan;
    twin.recompute = false;
    const auto it = index_of_.find(key_of(twin, c.global_batch));
    return it != index_of_.end() && fits_with_headroom(check_memory(it->second, nullptr));
  }

  // An overlap=off candidate whose overlap=on twin fits: the simulator plays the same work with
  // the same communication, started no later, and communication does not slow compute there
  // (sim/simulator.hpp), so it cannot be faster. Only where the twin's buffers in flight do not
  // fit is it worth simulating.
  bool needless_overlap_off(const Candidate& c) {
    if (c.plan.overlap || !options_.space.overlap_off_only_if_needed) return false;
    Plan twin = c.plan;
    twin.overlap = true;
    const auto it = index_of_.find(key_of(twin, c.global_batch));
    return it != index_of_.end() && fits_with_headroom(check_memory(it->second, nullptr));
  }

  // Compiles a candidate and decides: out of memory, a needless recompute or overlap=off twin,
  // bounded, or to be simulated (pushed on the queue by its full bound).
  void expand(int i) {
    Schedule schedule;
    const Evaluated& e = check_memory(i, &schedule);
    if (e.oom) {
      out_.out_of_memory.push_back(e);
      return;
    }
    const Candidate& c = candidates_[i];
    if (needless_recompute(c)) {
      ++out_.skipped_recompute;
      return;
    }
    if (needless_overlap_off(c)) {
      ++out_.skipped_overlap_off;
      return;
    }
    const double bound =
        pool_.step_lower_bound(schedule) * weight(c) / (double(c.global_batch) * seq_);
    if (bound >= threshold(i)) {
      ++out_.bounded;
      return;
    }
    queue_.push({bound, i});
  }

  // Expands every candidate whose floor (never above its full bound) is below the queue's least.
  void expand_below_queue() {
    while (next_ < order_.size() &&
           (queue_.empty() || floor_per_token_[order_[next_]] < queue_.top().first)) {
      const int i = order_[next_];
      if (floor_per_token_[i] >= threshold(i)) {
        if (global_) {  // sorted by floor: no later candidate can win either
          out_.bounded += int(order_.size() - next_);
          next_ = order_.size();
          return;
        }
        ++out_.bounded, ++next_;
        continue;
      }
      ++next_;
      expand(i);
    }
  }

  // The next candidate to simulate: the least full bound of all; -1 when nothing can win.
  int next_to_simulate() {
    for (;;) {
      expand_below_queue();
      if (queue_.empty()) return -1;
      const auto [b, i] = queue_.top();
      queue_.pop();
      if (b < threshold(i)) return i;
      ++out_.bounded;
      if (global_) {  // the least bound left cannot win: neither can the rest
        out_.bounded += int(queue_.size() + order_.size() - next_);
        while (!queue_.empty()) queue_.pop();
        next_ = order_.size();
        return -1;
      }
    }
  }

  void settle(int i, const SimOutcome& r) {
    Evaluated e = checked_.at(i);
    if (!r.ok) {
      e.reason = r.error;
      out_.failed.push_back(e);
      return;
    }
    e.step_time_s = r.step_time_s, e.tokens_per_s = r.tokens_per_s;
    e.tflops_per_gpu = r.tflops_per_gpu, e.mfu = r.mfu;
    e.compute_s = r.compute_s, e.exposed_comm_s = r.exposed_comm_s, e.bubble_s = r.bubble_s;
    e.communication_s = r.communication_s;
    if (options_.train_tokens) e.time_to_train_s = *options_.train_tokens / r.tokens_per_s;
    out_.ranked.push_back(e);
    const double cost = ranking_cost(e, weight(e.candidate) / r.tokens_per_s, options_);
    double& best = best_per_set_.try_emplace(e.candidate.subset.gpus, 1e300).first->second;
    best = std::min(best, cost);
    fastest_.insert(cost);
    if (global_ && int(fastest_.size()) > options_.keep_top)
      fastest_.erase(std::prev(fastest_.end()));
  }

  // Plans are decided in waves of a fixed size: a wave is chosen against the results of the
  // waves before it only, so what is simulated never depends on timing or the worker count. (A
  // bound only tightens as results settle, so choosing early never skips a winner.)
  void simulate_waves() {
    constexpr std::size_t kWave = 8;
    SimOptions sim_options;
    sim_options.calibration = options_.calibration;
    const SimPool::Job job = [&](Simulator& simulator, int i) {
      const Candidate& c = candidates_[i];
      return simulator.run(model_, compile(model_, c.plan, c.global_batch, seq_), sim_options);
    };
    for (;;) {
      std::vector<int> wave;
      while (wave.size() < kWave) {
        const int i = next_to_simulate();
        if (i < 0) break;
        wave.push_back(i);
      }
      if (wave.empty()) return;
      const std::vector<SimOutcome> results = pool_.run(wave, job);
      for (std::size_t k = 0; k < wave.size(); ++k)
        settle(wave[k], results[k]);  // in the wave's order
    }
  }

  const ModelSpec& model_;
  const Slice& slice_;
  const std::vector<Candidate>& candidates_;
  const SearchOptions& options_;
  SearchResult& out_;
  const int seq_, n_;
  SimPool pool_;
  const PlanFloor floor_;
  const bool global_;
  std::vector<double> floor_per_token_;
  std::vector<int> order_;
  std::size_t next_ = 0;                 // into order_: the next candidate to expand
  std::map<std::string, int> index_of_;  // plan text + batch -> candidate index
  std::map<int, Evaluated> checked_;
  using Entry = std::pair<double, int>;  // full bound per token, candidate
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue_;
  std::map<std::vector<int>, double> best_per_set_;  // seconds per token
  std::multiset<double> fastest_;                    // the keep_top best seconds per token so far
};

// Best first by the objective's cost per token (a tight plan's raised by the tolerance), then
// with headroom first, then fewer GPUs, then by plan text.
void rank_by_objective(std::vector<Evaluated>& ranked, const SearchOptions& options) {
  auto cost = [&](const Evaluated& e) {
    return ranking_cost(
        e, objective_weight(options.objective, e.candidate.plan.ranks()) / e.tokens_per_s, options);
  };
  std::sort(ranked.begin(), ranked.end(), [&](const Evaluated& a, const Evaluated& b) {
    const double ca = cost(a), cb = cost(b);
    if (ca != cb) return ca < cb;
    if (a.tight != b.tight) return b.tight;
    if (a.candidate.plan.ranks() != b.candidate.plan.ranks())
      return a.candidate.plan.ranks() < b.candidate.plan.ranks();
    return to_string(a.candidate.plan) < to_string(b.candidate.plan);
  });
}

}  // namespace

SearchResult evaluate(const ModelSpec& model, const Slice& slice,
                      const std::vector<Candidate>& candidates, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SearchResult out;
  out.enumerated = int(candidates.size());
  Evaluation(model, slice, candidates, options, out).run();
  rank_by_objective(out.ranked, options);
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
