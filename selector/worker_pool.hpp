// Simulation worker processes for the search: one per core, each with its own long-lived
// Simulator (SimGrid's Engine is a process singleton, so parallel simulations need processes).
#pragma once
#include <sys/types.h>

#include <vector>

#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "platforms/slice.hpp"
#include "sim/cost/calibration.hpp"

namespace fabtrain {

// The few numbers a worker sends back per simulated schedule.
struct WireResult {
  int index = 0;
  int ok = 0;
  double step_time_s = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0;  // the critical rank's breakdown
  char error[200] = {};
};

// Forked once the candidates are enumerated, so the workers share them copy-on-write; the parent
// sends indices over a pipe, a worker compiles that candidate's schedule and simulates it, and the
// parent reads WireResults back (the parent compiles only what it needs for memory and bounds).
// Forked even for one worker: SimGrid locks its platform at a process's first run, so a parent
// that never simulates can go on searching other slices.
struct Candidate;
class WorkerPool {
 public:
  WorkerPool(int count, const ModelSpec& model, const Slice& slice,
             const std::vector<Candidate>& candidates, int seq, const Calibration* calibration);
  ~WorkerPool();
  int size() const { return int(workers_.size()); }
  void send(int worker, int index);              // simulate candidates[index]
  int wait_any(const std::vector<int>& busy);    // a busy worker whose result is ready
  WireResult receive(int worker);

 private:
  struct Worker {
    pid_t pid;
    int to, from;
  };
  std::vector<Worker> workers_;
};

}  // namespace fabtrain
