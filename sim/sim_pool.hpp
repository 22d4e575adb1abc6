// Many simulations at once, and the bounds that decide which are needed: the one door through
// which the selector and the calibration reach the simulator when they simulate many schedules.
// SimGrid's Engine is a process singleton that seals its platform at a process's first run, so
// each job runs in a child process forked for it alone, at most `workers` at a time. The parent
// never simulates: it can go on building platforms for other slices, and each child's clock
// starts where the parent's stands (at 0 in a process that never ran), so a job's numbers do
// not depend on which jobs ran before it (a worker whose clock kept running changed the last
// digits, and plan --json differed between runs). A child reads the jobs' inputs as the parent
// held them at the fork, so the parent may change them between run() calls (a calibration being
// fitted). Results come back in the order of the jobs, errors whole.
// Not here: playing a schedule (simulator.hpp), the bounds themselves (lower_bound.hpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"
#include "sim/lower_bound.hpp"
#include "sim/simulator.hpp"

namespace fabtrain {

class SlicePlatform;

// What a job's process sends back: the step's headline numbers, or why it failed.
struct SimOutcome {
  bool ok = false;
  double step_time_s = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0;  // the critical rank's breakdown
  double communication_s = 0;  // its communication in flight, hidden or not
  std::string error;           // the job's exception message, whole, or how its process died
};

class SimPool {
 public:
  // workers: the most jobs running at once; 0 = one per core. Builds the slice's platform in this
  // process and configures it with the calibration (none: the catalog's defaults) for the bounds;
  // throws fabtrain::Error as Simulator's constructor does.
  SimPool(const Slice& slice, const Calibration* calibration, int workers = 0);

  int workers() const { return workers_; }
  const Slice& slice() const { return simulator_.slice(); }

  // step_lower_bound() and a PlanFloor on this slice's configured platform.
  double step_lower_bound(const Schedule& schedule) const;
  BoundInputs bound_inputs(const Schedule& schedule) const;
  double step_lower_bound(const BoundInputs& inputs) const;
  PlanFloor plan_floor(const ModelSpec& model, int seq, Precision precision) const;

  // A job simulates on the given Simulator (the pool's, as the fork found it: changes to it, such
  // as override_wan_latency, stay in the job's process) and returns its result.
  using Job = std::function<SimResult(Simulator& simulator, int job)>;
  // Runs job(simulator, j) for every j of `jobs`, each in a process of its own; the outcomes in
  // the order of `jobs` (a job whose process could not start or died says so in its error).
  // Throws fabtrain::Error only when waiting for the processes fails.
  std::vector<SimOutcome> run(const std::vector<int>& jobs, const Job& job);

 private:
  mutable Simulator simulator_;
  const Calibration* calibration_;
  SlicePlatform* platform_;
  int workers_;
};

}  // namespace fabtrain
