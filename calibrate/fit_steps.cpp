// Communication corrections fitted to whole simulated steps (see fit_steps.hpp).
#include "calibrate/fit_steps.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "common/error.hpp"
#include "plan/plan.hpp"
#include "plan/schedule.hpp"
#include "sim/sim_pool.hpp"

namespace fabtrain::calib {
namespace {

double median_step_s(const RunData& run) {
  std::vector<double> walls;
  for (std::size_t i = run.steps.size() > 1 ? 1 : 0; i < run.steps.size(); ++i)
    walls.push_back(run.steps[i].wall_s);
  if (walls.empty()) fail("{}: no timed step to fit", run.path);
  std::sort(walls.begin(), walls.end());
  return walls[walls.size() / 2];
}

struct Case {
  ModelSpec model;
  Schedule schedule;
  double rtt_s = 0, measured_s = 0;
};

// One searched parameter: where it lives, its bounds, its current search step and the step
// below which the search stops moving it.
struct Knob {
  double* value;
  double low, high, step, resolution;
};

// The runs as cases to simulate, and what their schedules use: the collective operations (those
// with calls of at most small_bytes apart) and whether any point-to-point transfer.
struct Cases {
  std::vector<Case> cases;
  std::set<CollectiveOp> ops, with_small_calls;
  bool point_to_point = false;
};

Cases read_cases(const std::vector<StepFitRun>& runs, double small_bytes, StepFitResult& result) {
  Cases out;
  for (const auto& r : runs) {
    const RunData& run = *r.run;
    if (run.batch <= 0 || run.seq <= 0 || run.model_fields.is_null())
      fail("{}: the header lacks batch, seq or model fields (record it with a newer fabtrain-exec)",
           run.path);
    Case c{model_of(run.model_fields, run.model, run.path), {}, r.path_rtt_s, median_step_s(run)};
    c.schedule = compile(c.model, parse_plan(run.plan), run.batch, run.seq);
    if (c.schedule.world != run.world)
      fail("{}: plan {} has {} ranks but the record has {}", run.path, run.plan, c.schedule.world,
           run.world);
    for (const auto& stream : c.schedule.ranks)
      for (const auto& in : stream) {
        if (const auto* col = std::get_if<Collective>(&in)) {
          out.ops.insert(col->op);
          if (col->bytes <= small_bytes) out.with_small_calls.insert(col->op);
        }
        if (std::holds_alternative<Send>(in)) out.point_to_point = true;
      }
    result.labels.push_back(run.path);
    result.measured_s.push_back(c.measured_s);
    out.cases.push_back(std::move(c));
  }
  return out;
}

// The calibration's parameters the fit moves (created where the calibration has none yet).
std::vector<Knob> knobs_of(Calibration& calibration, const Cases& cases, double small_bytes) {
  std::vector<Knob> knobs;
  for (CollectiveOp op : cases.ops) {
    auto [at, fresh] = calibration.collectives.try_emplace(op);
    auto& c = at->second;
    knobs.push_back({&c.latency_terms, 1, 20, std::max(0.25, 0.25 * c.latency_terms), 0.01});
    knobs.push_back({&c.bandwidth_factor, 0, 5, std::max(0.1, 0.25 * c.bandwidth_factor), 0.005});
    knobs.push_back({&c.overhead_s, 0, 0.05, std::max(1e-4, 0.25 * c.overhead_s), 1e-6});
    if (cases.with_small_calls.count(op)) {
      if (fresh || c.small_bytes <= 0) c.small_latency_terms = c.latency_terms;
      c.small_bytes = small_bytes;
      knobs.push_back(
          {&c.small_latency_terms, 1, 20, std::max(0.25, 0.25 * c.small_latency_terms), 0.01});
    }
  }
  if (cases.point_to_point) {
    if (!calibration.p2p) calibration.p2p = P2pCalibration{};
    auto& p = *calibration.p2p;
    knobs.push_back({&p.latency_terms, 1, 20, std::max(0.25, 0.25 * p.latency_terms), 0.01});
    knobs.push_back({&p.overhead_s, 0, 0.05, std::max(1e-4, 0.25 * p.overhead_s), 1e-6});
  }
  return knobs;
}

// Coordinate search: each knob one step up or down while the error falls, its step halved when
// neither helps, until no knob moves and every step is below its resolution (or 100 sweeps).
void coordinate_search(std::vector<Knob>& knobs, const std::function<double()>& error_now) {
  double best = error_now();
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool moved = false, settled = true;
    for (auto& k : knobs) {
      bool improved = false;
      for (double direction : {+1.0, -1.0}) {
        const double old = *k.value;
        *k.value = std::clamp(old + direction * k.step, k.low, k.high);
        if (*k.value == old) continue;
        const double error = error_now();
        if (error < best * (1 - 1e-9)) {
          best = error;
          improved = true;
          break;
        }
        *k.value = old;
      }
      if (improved)
        moved = true;
      else
        k.step /= 2;
      if (k.step >= k.resolution) settled = false;
    }
    if (!moved && settled) break;
  }
}

}  // namespace

StepFitResult fit_collectives_to_steps(const Slice& slice, const std::vector<StepFitRun>& runs,
                                       Calibration& calibration, double small_bytes) {
  StepFitResult result;
  Cases read = read_cases(runs, small_bytes, result);
  std::vector<Case>& cases = read.cases;
  // Each pass simulates every case at once, each in a process of its own (sim/sim_pool.hpp): the
  // processes read the calibration as it stands when the pass starts.
  SimPool pool(slice, &calibration);
  SimOptions options;
  options.calibration = &calibration;
  std::vector<int> all(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) all[i] = int(i);
  const SimPool::Job job = [&](Simulator& simulator, int i) {
    override_wan_latency(simulator.slice(), cases[i].rtt_s);
    return simulator.run(cases[i].model, cases[i].schedule, options);
  };
  auto simulate = [&](std::vector<double>* steps) {
    const std::vector<SimOutcome> outcomes = pool.run(all, job);
    double sum = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (!outcomes[i].ok) fail("{}: {}", result.labels[i], outcomes[i].error);
      const double step = outcomes[i].step_time_s;
      ++result.simulations;
      if (steps) steps->push_back(step);
      const double e = std::log(step / cases[i].measured_s);
      sum += e * e;
    }
    return sum / double(cases.size());
  };
  simulate(&result.before_s);
  std::vector<Knob> knobs = knobs_of(calibration, read, small_bytes);
  coordinate_search(knobs, [&] { return simulate(nullptr); });
  simulate(&result.after_s);
  return result;
}

}  // namespace fabtrain::calib
