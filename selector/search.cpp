// The best-first, bounded search over the enumerated plans (see search.hpp).
#include "selector/search.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <queue>
#include <set>

#include "common/error.hpp"
#include "selector/family.hpp"
#include "selector/site_sets.hpp"
#include "sim/lower_bound.hpp"
#include "sim/memory.hpp"
#include "sim/sim_pool.hpp"

namespace fabtrain {
namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;
// With best_of_each_family, each family may spend this share of each budget (all four together
// one search's), twice that until it has a plan simulated; the search as a whole stops only
// where all four could have.
constexpr double kFamilyShare = 0.25;
// Plans compiled, fitting and not bounded out, that are simulated before any other is expanded
// while nothing is simulated yet.
constexpr std::size_t kFirstWave = 8;

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

std::string memo_key(const Plan& plan, int global_batch) {
  return to_string(plan) + "/" + std::to_string(global_batch);
}

std::string describe_gpus(const Slice& slice, const std::vector<int>& gpus) {
  const auto groups = count_gpus_by(
      slice, gpus, [&](const SliceGpu& g) { return g.type->name + "@" + slice.vms[g.vm].site; });
  std::string out;
  for (auto& [key, n] : groups) out += fmt::format("{}{}x {}", out.empty() ? "" : " + ", n, key);
  return out;
}

namespace {

// One evaluation's state: the candidates known so far, what is known of each, the queue of
// compiled candidates by full bound, and what must stay exact. GPU subsets are opened (their
// plans enumerated) only when their floor is the least left, so a subset whose floor cannot beat
// what must stay exact is never enumerated. Phases: expand candidates (memory, recompute twin,
// bound) best first by floor; simulate in waves; rank.
class Evaluation {
 public:
  Evaluation(const ModelSpec& model, const Slice& slice, const SearchOptions& options,
             SearchResult& out)
      : model_(model),
        slice_(slice),
        options_(options),
        out_(out),
        seq_(options.space.seq > 0 ? options.space.seq : model.n_ctx),
        pool_(slice, options.calibration, options.workers),
        floor_(pool_.plan_floor(model, seq_, options.space.precision)),
        global_(options.keep_top > 0) {
    if (options.answer_of && options.must_beat < 1e300)
      best_answer_ = options.must_beat_answer, best_answer_cost_ = options.must_beat;
  }

  const PlanFloor& floor() const { return floor_; }

  // Candidates known up front (evaluate()).
  void add_candidates(const std::vector<Candidate>& candidates) {
    for (const auto& c : candidates) add(c);
  }

  // GPU subsets whose plans are enumerated when their floor is the least left (search()).
  void add_subsets(const std::vector<GpuSubset>& subsets) {
    for (const auto& s : subsets)
      if (!options_.only_subsets || options_.only_subsets(s))
        subsets_.push_back({floor_.seconds_per_token_on(s.gpus) *
                                objective_weight(options_.objective, int(s.gpus.size())),
                            s});
    std::stable_sort(subsets_.begin(), subsets_.end(),
                     [](auto& a, auto& b) { return a.first < b.first; });
    open_one_site_first();
  }

  void run() { simulate_waves(); }

  // The subset of least floor within one site is opened first, so that the first plans
  // simulated need no wide-area link. A floor counts compute alone, so on many sites the subsets
  // of every GPU have the least floors; were they opened first, a search that spends its budget
  // could answer with a plan over every site that one site beats. Its plans join the others by
  // their floors, and the subsets left stay in floor order (what skip_the_rest() reads), so this
  // changes what a spent budget reaches, never what an exact search keeps.
  void open_one_site_first() {
    const auto one_site = std::find_if(subsets_.begin(), subsets_.end(),
                                       [](const auto& s) { return s.second.sites.size() == 1; });
    if (one_site == subsets_.end()) return;
    const GpuSubset subset = one_site->second;
    subsets_.erase(one_site);
    open(subset);
  }

  // The least cost per token that a plan of the space not simulated could reach (1e300: none).
  double least_unsimulated() const {
    double least = least_skipped_;
    for (std::size_t k = next_subset_; k < subsets_.size(); ++k)
      least = std::min(least, subsets_[k].first);
    if (!floors_.empty()) least = std::min(least, floors_.top().first);
    for (const auto& [bound, i] : deferred_) least = std::min(least, bound);
    if (!queue_.empty()) least = std::min(least, queue_.top().first);
    return least;
  }

 private:
  using Entry = std::pair<double, int>;  // cost per token (floor or bound), candidate
  using MinHeap = std::priority_queue<Entry, std::vector<Entry>, std::greater<>>;

  // Costs per token in the objective's terms: seconds, or GPU-seconds for gpu-hours.
  double weight(const Candidate& c) const {
    return objective_weight(options_.objective, c.plan.ranks());
  }

  static std::string key_of(const Plan& plan, int global_batch) {
    return memo_key(plan, global_batch);
  }

  void add(const Candidate& c) {
    if (options_.only && !options_.only(c.plan)) return;
    ++out_.enumerated;
    ++out_.enumerated_by_family[family_index(c)];
    // Out of memory by the floor alone: counted and kept as an example, never stored.
    double floor_bytes = 0;
    if (const int r = floor_.short_of_memory(c.plan, c.global_batch, &floor_bytes); r >= 0) {
      if (out_.out_of_memory_count++ < kOutOfMemoryKept)
        out_.out_of_memory.push_back(floor_out_of_memory(c, r, floor_bytes));
      return;
    }
    const int i = int(candidates_.size());
    candidates_.push_back(c);
    index_of_.emplace(key_of(c.plan, c.global_batch), i);
    floors_.push({floor_.seconds_per_token(c.plan, c.global_batch) * weight(c), i});
  }

  void open_next_subset() { open(subsets_[next_subset_++].second); }

  void open(const GpuSubset& subset) {
    ++out_.subsets_opened;
    for (const auto& c : plans_on(model_, slice_, subset, options_.space)) add(c);
  }

  // Skipped for its bound or floor: it cannot beat what must stay exact, and the gap says so.
  void skip(double cost, int count = 1) {
    out_.bounded += count;
    least_skipped_ = std::min(least_skipped_, cost);
  }

  // What must stay exact: the best plan of every GPU set (keep_top = 0, for recommend), or the
  // keep_top fastest plans overall. A plan whose bound reaches the threshold cannot be either.
  double threshold(const std::vector<int>& gpus) const {
    if (options_.exhaustive) return 1e300;
    const double beat = options_.must_beat;
    if (global_)
      return int(fastest_.size()) < options_.keep_top ? beat : std::min(beat, *fastest_.rbegin());
    const auto it = best_per_set_.find(gpus);
    return it == best_per_set_.end() ? beat : std::min(beat, it->second);
  }

  // What candidate c must beat to be simulated: what must stay exact for its GPU set or overall,
  // or, with best_of_each_family, its family's best so far.
  double threshold_for(const Candidate& c) const {
    const double t = threshold(c.subset.gpus);
    return options_.best_of_each_family ? std::max(t, best_of_family_[family_index(c)]) : t;
  }

  // Under keep_top: what nothing left may reach to be skipped at once (skip_the_rest()).
  double threshold_of_all() const {
    double t = threshold({});
    if (options_.best_of_each_family)
      for (double best : best_of_family_) t = std::max(t, best);
    return t;
  }

  static std::size_t family_index(const Candidate& c) { return std::size_t(family_of(c.plan)); }

  // With best_of_each_family: the family has spent its share of the compile budget (its
  // candidates not yet compiled are skipped, their floors kept for the gap) or of the simulate
  // budget (its compiled candidates left are skipped, their bounds kept).
  bool family_spent(const Candidate& c, const std::array<double, 4>& work, double budget) const {
    if (!options_.best_of_each_family || options_.exhaustive || !(budget > 0)) return false;
    const std::size_t f = family_index(c);
    return work[f] >= kFamilyShare * (best_of_family_[f] < 1e300 ? 1 : 2) * budget;
  }
  bool family_compiled_enough(const Candidate& c) const {
    return family_spent(c, family_compile_work_, options_.compile_budget);
  }
  bool family_simulated_enough(const Candidate& c) const {
    return family_spent(c, family_simulate_work_, options_.simulate_budget);
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

  Evaluated memory_of(const Candidate& c, const Schedule& schedule) const {
    Evaluated e;
    e.candidate = c;
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
    return e;
  }

  // What compiling candidate i tells: from the plan memo, else compiled and kept there (its bound
  // inputs with keep_bound_inputs). With `bound` set, `bound` gets the step's lower bound: the one
  // taken when i was compiled here, else from the memo's bound inputs, else compiled again.
  const Evaluated& compiled(int i, double* bound = nullptr) {
    const Candidate& c = candidates_[i];
    const std::string key = key_of(c.plan, c.global_batch);
    PlanMemo& memo = options_.compiled ? *options_.compiled : own_compiled_;
    auto known = memo.find(key);
    const auto here = bound_at_compile_.find(i);
    if (known != memo.end() && (!bound || known->second.bound || here != bound_at_compile_.end())) {
      if (bound)
        *bound = here != bound_at_compile_.end() ? here->second
                                                 : pool_.step_lower_bound(*known->second.bound);
      return known->second.memory;
    }
    const Schedule schedule = compile(model_, c.plan, c.global_batch, seq_);
    ++out_.compiled;
    compile_work_ += work_of(c);
    family_compile_work_[family_index(c)] += work_of(c);
    const double step_bound = bound_at_compile_[i] = pool_.step_lower_bound(schedule);
    if (bound) *bound = step_bound;
    if (known == memo.end())
      known = memo.emplace(key, CompiledPlan{memory_of(c, schedule), {}}).first;
    if (options_.keep_bound_inputs) known->second.bound = pool_.bound_inputs(schedule);
    return known->second.memory;
  }

  // Memory, from the compiled plan; cached (a recompute=on candidate asks about its twin).
  const Evaluated& check_memory(int i) {
    auto it = checked_.find(i);
    if (it != checked_.end()) return it->second;
    const Candidate& c = candidates_[i];
    double floor_bytes = 0;
    if (const int r = floor_.short_of_memory(c.plan, c.global_batch, &floor_bytes); r >= 0)
      return checked_.emplace(i, floor_out_of_memory(c, r, floor_bytes)).first->second;
    Evaluated e = compiled(i);
    e.candidate = c;
    return checked_.emplace(i, std::move(e)).first->second;
  }

  // The step's lower bound (sim/lower_bound.hpp), from the memo where this slice's is known.
  double bound_of(int i) {
    if (!options_.memo) {
      double bound = 0;
      compiled(i, &bound);
      return bound;
    }
    const Candidate& c = candidates_[i];
    const std::string key = key_of(c.plan, c.global_batch);
    const auto [it, fresh] = options_.memo->bounds.try_emplace(key, 0.0);
    if (fresh) compiled(i, &it->second);
    const auto floor = options_.memo->floors.find(key);
    return floor == options_.memo->floors.end() ? it->second : std::max(it->second, floor->second);
  }

  // Whether the candidate's twin (the same plan with one field changed) is in the space and fits
  // with headroom.
  bool twin_fits(const Candidate& c, Plan twin) {
    const auto it = index_of_.find(key_of(twin, c.global_batch));
    return it != index_of_.end() && fits_with_headroom(check_memory(it->second));
  }

  static bool fits_with_headroom(const Evaluated& e) { return !e.oom && !e.tight; }

  // A recompute=on candidate whose recompute=off twin fits (with headroom) is not worth
  // simulating.
  bool needless_recompute(const Candidate& c) {
    if (!c.plan.recompute || !options_.space.recompute_only_if_needed) return false;
    Plan twin = c.plan;
    twin.recompute = false;
    return twin_fits(c, twin);
  }

  // An overlap=off candidate whose overlap=on twin fits: the simulator plays the same work with
  // the same communication, started no later, and communication does not slow compute there
  // (sim/simulator.hpp), so it cannot be faster. Only where the twin's buffers in flight do not
  // fit is it worth simulating.
  bool needless_overlap_off(const Candidate& c) {
    if (c.plan.overlap || !options_.space.overlap_off_only_if_needed) return false;
    Plan twin = c.plan;
    twin.overlap = true;
    return twin_fits(c, twin);
  }

  // Compiles a candidate and decides: out of memory, a needless recompute or overlap=off twin,
  // bounded, or to be simulated (pushed on the queue by its full bound).
  void expand(int i) {
    const Evaluated& e = check_memory(i);
    if (e.oom) {
      if (out_.out_of_memory_count++ < kOutOfMemoryKept) out_.out_of_memory.push_back(e);
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
    const double bound = bound_of(i) * weight(c) / (double(c.global_batch) * seq_);
    if (bound >= threshold_for(c))
      skip(bound);
    else
      queue_.push({bound, i});
  }

  // Under keep_top, once the least floor left reaches the threshold nothing left can win: every
  // candidate and subset left is skipped at once.
  void skip_the_rest() {
    while (!floors_.empty()) skip(floors_.top().first), floors_.pop();
    while (!queue_.empty()) skip(queue_.top().first), queue_.pop();
    if (next_subset_ < subsets_.size()) {
      for (std::size_t k = next_subset_; k < subsets_.size(); ++k)
        least_skipped_ = std::min(least_skipped_, subsets_[k].first);
      out_.subsets_bounded += int(subsets_.size() - next_subset_);
      next_subset_ = subsets_.size();
    }
  }

  static double work_of(const Candidate& c) { return double(c.plan.ranks()) * c.plan.mb; }

  // How far the budgets stretch: twice until something is simulated (so there is an answer;
  // beyond, the smallest subsets are opened), and with best_of_each_family as far as the four
  // families' stretched shares reach.
  double stretch() const {
    const double first = out_.ranked.empty() ? 2 : 1;
    return options_.best_of_each_family ? std::max(first, 2 * kFamilyShare * kFamilies.size())
                                        : first;
  }

  // Spent once the work passes the budget, if something was simulated (so there is an answer);
  // with nothing simulated yet the search goes on best first up to two budgets, then falls back
  // to the smallest subsets.
  bool over_budget() {
    if (options_.exhaustive) return false;
    if (smallest_first_) return !out_.ranked.empty();
    // Enumeration ends the search only while nothing is simulated (then the smallest subsets
    // give an answer); after, it only stops opening subsets (enumeration_spent()).
    const bool over =
        (options_.compile_budget > 0 && compile_work_ >= stretch() * options_.compile_budget) ||
        (options_.simulate_budget > 0 && simulate_work_ >= stretch() * options_.simulate_budget) ||
        (out_.ranked.empty() && options_.enumerate_budget > 0 &&
         out_.enumerated >= stretch() * options_.enumerate_budget);
    out_.budget_spent = out_.budget_spent || over;
    if (over && out_.ranked.empty()) fall_back_to_smallest();
    return over && !smallest_first_;
  }

  // The budget spent on large subsets whose plans did not fit: everything queued is skipped (its
  // bound kept for the gap) and the subsets left are opened smallest first, until one plan is
  // simulated.
  void fall_back_to_smallest() {
    smallest_first_ = true;
    while (!floors_.empty()) skip(floors_.top().first), floors_.pop();
    while (!queue_.empty()) skip(queue_.top().first), queue_.pop();
    std::stable_sort(subsets_.begin() + std::ptrdiff_t(next_subset_), subsets_.end(),
                     [](auto& a, auto& b) { return a.second.gpus.size() < b.second.gpus.size(); });
  }

  // Past the enumeration budget no subset is opened (what memory grows with): the plans already
  // enumerated are still expanded and simulated best first, and the subsets left go to the gap.
  // With nothing left to simulate and nothing simulated, the smallest subsets are opened instead
  // (fall_back_to_smallest()).
  bool enumeration_spent() {
    if (options_.exhaustive || smallest_first_ || options_.enumerate_budget <= 0 ||
        out_.enumerated < stretch() * options_.enumerate_budget)
      return false;
    if (out_.ranked.empty() && floors_.empty() && queue_.empty()) {
      fall_back_to_smallest();
      return false;
    }
    return true;
  }

  // Opens subsets and expands candidates, least floor first, while a floor is below the queue's
  // least bound (a floor never exceeds its candidate's bound, nor a subset's its plans' floors).
  void expand_below_queue() {
    for (;;) {
      if (over_budget()) return;
      // Past the enumeration budget the subsets left stay unopened (least_unsimulated() counts
      // them), unless the search falls back to the smallest.
      const bool may_open = next_subset_ < subsets_.size() && !enumeration_spent();
      if (next_subset_ < subsets_.size() && !may_open) out_.budget_spent = true;
      const double subset_floor = may_open ? subsets_[next_subset_].first : 1e300;
      const double plan_floor = floors_.empty() ? 1e300 : floors_.top().first;
      const double least = std::min(subset_floor, plan_floor);
      if (least >= 1e300 || (!queue_.empty() && least >= queue_.top().first)) return;
      // Until something is simulated, a wave's worth of compiled plans is simulated first: the
      // answer it gives prunes what is left (the order changes, not what stays exact).
      if (out_.ranked.empty() && queue_.size() >= kFirstWave) return;
      if (global_ && least >= threshold_of_all()) return skip_the_rest();
      // Until something is simulated, the plans already enumerated are expanded before another
      // subset is opened.
      const bool first_wave_pending = out_.ranked.empty() && !floors_.empty();
      if (subset_floor <= plan_floor && !first_wave_pending) {
        open_next_subset();
        continue;
      }
      const int i = floors_.top().second;
      floors_.pop();
      if (plan_floor >= threshold_for(candidates_[i]) || family_compiled_enough(candidates_[i]))
        skip(plan_floor);
      else
        expand(i);
    }
  }

  // The next candidate to simulate: the least full bound of all; -1 when nothing can win.
  int next_to_simulate() {
    for (;;) {
      expand_below_queue();
      if (queue_.empty() || over_budget()) return -1;
      const auto [b, i] = queue_.top();
      if (global_ && b >= threshold_of_all()) {
        skip_the_rest();
        return -1;
      }
      queue_.pop();
      if (b >= threshold_for(candidates_[i]) || family_simulated_enough(candidates_[i])) {
        skip(b);
      } else if (options_.answer_of && best_answer_cost_ < 1e300 &&
                 options_.answer_of(candidates_[i]) == best_answer_) {
        deferred_.push_back({b, i});  // cannot change the answer while it is the best's
      } else {
        return i;
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
    double& family_best = best_of_family_[family_index(e.candidate)];
    family_best = std::min(family_best, cost);
    if (options_.answer_of && cost < best_answer_cost_) take_answer(e.candidate, cost);
    if (global_ && int(fastest_.size()) > options_.keep_top)
      fastest_.erase(std::prev(fastest_.end()));
  }

  // A new best: where its answer is another, the plans deferred for the old one may change it.
  void take_answer(const Candidate& c, double cost) {
    best_answer_cost_ = cost;
    std::string answer = options_.answer_of(c);
    if (answer == best_answer_) return;
    best_answer_ = std::move(answer);
    for (const Entry& deferred : deferred_) queue_.push(deferred);
    deferred_.clear();
  }

  // Simulates the wave's candidates that the memo does not know, in the pool.
  std::vector<SimOutcome> simulate(const std::vector<int>& wave) {
    std::vector<SimOutcome> results(wave.size());
    std::vector<int> jobs;
    std::vector<std::size_t> slots;
    for (std::size_t k = 0; k < wave.size(); ++k) {
      const Candidate& c = candidates_[wave[k]];
      const auto* memo = options_.memo ? &options_.memo->outcomes : nullptr;
      const auto known =
          memo ? memo->find(key_of(c.plan, c.global_batch)) : decltype(memo->end()){};
      if (memo && known != memo->end())
        results[k] = known->second;
      else
        jobs.push_back(wave[k]), slots.push_back(k);
    }
    SimOptions sim_options;
    sim_options.calibration = options_.calibration;
    const SimPool::Job job = [&](Simulator& simulator, int i) {
      const Candidate& c = candidates_[i];
      return simulator.run(model_, compile(model_, c.plan, c.global_batch, seq_), sim_options);
    };
    const std::vector<SimOutcome> fresh =
        jobs.empty() ? std::vector<SimOutcome>{} : pool_.run(jobs, job);
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      simulate_work_ += work_of(candidates_[jobs[j]]);
      family_simulate_work_[family_index(candidates_[jobs[j]])] += work_of(candidates_[jobs[j]]);
      results[slots[j]] = fresh[j];
      const Candidate& c = candidates_[jobs[j]];
      if (options_.memo) options_.memo->outcomes.emplace(key_of(c.plan, c.global_batch), fresh[j]);
    }
    out_.simulated += int(jobs.size());
    return results;
  }

  // Plans are decided in waves of a size fixed by the options: a wave is chosen against the
  // results of the waves before it only, so what is simulated never depends on timing or the
  // worker count. (A bound only tightens as results settle, so choosing early never skips a
  // winner; a wave no larger than what must stay exact wastes few simulations.)
  void simulate_waves() {
    const std::size_t kWave = global_ ? std::clamp<std::size_t>(options_.keep_top, 2, 8) : 8;
    for (;;) {
      std::vector<int> wave;
      while (wave.size() < kWave) {
        const int i = next_to_simulate();
        if (i < 0) break;
        wave.push_back(i);
      }
      if (wave.empty()) return;
      const std::vector<SimOutcome> results = simulate(wave);
      for (std::size_t k = 0; k < wave.size(); ++k)
        settle(wave[k], results[k]);  // in the wave's order
    }
  }

  const ModelSpec& model_;
  const Slice& slice_;
  const SearchOptions& options_;
  SearchResult& out_;
  const int seq_;
  SimPool pool_;
  const PlanFloor floor_;
  const bool global_;
  PlanMemo own_compiled_;                   // without options.compiled
  std::map<int, double> bound_at_compile_;  // by candidate: the step bound taken when compiled
  std::vector<Candidate> candidates_;
  std::vector<std::pair<double, GpuSubset>> subsets_;  // by floor, least first
  std::size_t next_subset_ = 0;                        // the next subset to open
  MinHeap floors_;                                     // candidates not yet expanded, by floor
  MinHeap queue_;                                      // compiled candidates, by full bound
  std::map<std::string, int> index_of_;                // plan text + batch -> candidate index
  std::map<int, Evaluated> checked_;
  std::map<std::vector<int>, double> best_per_set_;  // seconds per token
  std::multiset<double> fastest_;                    // the keep_top best seconds per token so far
  double least_skipped_ = 1e300;
  std::string best_answer_;          // with answer_of: the best's answer so far
  double best_answer_cost_ = 1e300;  // and its cost per token
  std::vector<Entry> deferred_;      // bounded below the threshold, of the best's answer
  double compile_work_ = 0, simulate_work_ = 0;  // rank-microbatches so far
  std::array<double, 4> family_compile_work_{}, family_simulate_work_{};  // of them, by family
  std::array<double, 4> best_of_family_{1e300, 1e300, 1e300, 1e300};      // cost per token
  bool smallest_first_ = false;  // see fall_back_to_smallest()
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
  Evaluation evaluation(model, slice, options, out);
  evaluation.add_candidates(candidates);
  evaluation.run();
  rank_by_objective(out.ranked, options);
  out.least_unsimulated_cost = evaluation.least_unsimulated();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

SearchResult search(const ModelSpec& model, const Slice& slice, const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  SearchResult out;
  Evaluation evaluation(model, slice, options, out);
  std::vector<GpuSubset> subsets;
  if (!options.space.all_subsets) {
    subsets = gpu_subsets(slice, false);
  } else {
    const bool by_gpus = options.objective == Objective::gpu_hours;
    const auto gpus_of = [&](const std::vector<std::string>& sites) {
      std::vector<int> gpus;
      for (const auto& g : slice.gpus())
        if (std::find(sites.begin(), sites.end(), slice.vms[g.vm].site) != sites.end())
          gpus.push_back(g.index);
      return gpus;
    };
    const SiteSets sets = site_sets(
        slice,
        [&](const std::vector<std::string>& sites) {
          const auto gpus = gpus_of(sites);
          return by_gpus ? evaluation.floor().fastest_gpu_seconds_per_token(gpus)
                         : evaluation.floor().seconds_per_token_on(gpus);
        },
        by_gpus);
    out.space_exact = sets.exact;
    out.site_sets = int(sets.sets.size());
    out.sites_left_out_at_most = sets.drop;
    out.left_out_floor = sets.left_out_floor;
    for (const auto& set : sets.sets)
      for (auto& subset : gpu_subsets_of(slice, set)) subsets.push_back(std::move(subset));
  }
  out.subsets = int(subsets.size());
  evaluation.add_subsets(subsets);
  evaluation.run();
  rank_by_objective(out.ranked, options);
  out.least_unsimulated_cost = evaluation.least_unsimulated();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

double SearchResult::gap(Objective objective) const {
  if (ranked.empty()) return 0;
  const Evaluated& best = ranked.front();
  const double cost = objective_weight(objective, best.candidate.plan.ranks()) / best.tokens_per_s;
  double least = least_unsimulated_cost;
  if (!space_exact) least = std::min(least, left_out_floor);
  return least >= cost ? 0.0 : 1 - least / cost;
}

}  // namespace fabtrain
