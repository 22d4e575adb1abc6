// Replay: one rank plays its instruction stream of the Schedule with the real communicator and
// the schedule's real message sizes, but no model: each compute instruction (fwd, bwd,
// optimizer) sleeps for the seconds the simulator's cost model gives it on a GPU type
// (sim/cost/compute_cost.hpp), so full-size plans (GPT-2 medium and large) can be measured over
// real or emulated links on machines that could never hold or compute them.
// Buffers: one per rank, allocated once, sized for the largest message, shared by every
// instruction (their contents do not matter); collectives run in place.
// Not here: the command line and the run loop (exec/run/replay_run.cpp).
#pragma once
#include <chrono>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "exec/comm/communicator.hpp"
#include "plan/run_record_format.hpp"
#include "plan/schedule.hpp"
#include "sim/cost/compute_cost.hpp"

namespace fabtrain {

class Watchdog;

// The floats an instruction moves: the schedule's bytes in whole 4-byte elements, a collective's
// rounded up to a multiple of its group's size (equal chunks); 0 for compute and loads.
std::size_t replay_message_floats(const Schedule& schedule, const Instruction& instruction);

// What one rank of a replay needs in host memory, in bytes.
struct ReplayMemory {
  double buffer = 0;       // the shared buffer: the largest message
  double send_copies = 0;  // the communicator copies each send until it completes (all of a step)
  double library = 0;      // the collective library's own temporaries (see replay.cpp)
  double process = 0;      // the process itself: MPI and the other libraries
  double in_flight = 0;    // the started requests' own buffers at their peak (overlap)
  double total() const { return buffer + send_copies + library + process + in_flight; }
};
ReplayMemory replay_memory(const Schedule& schedule, int rank);

// The seconds each instruction of a rank's stream sleeps (0 for communication and loads).
std::vector<double> modelled_seconds(const Schedule& schedule, int rank, const GpuType& gpu,
                                     const ComputeDefaults& defaults,
                                     const Calibration& calibration);

class Replayer {
 public:
  // Compute seconds per instruction are fixed here (the GPU type's roofline at the plan's
  // precision, with the calibration's efficiencies where it has them).
  Replayer(const Schedule& schedule, int rank, Communicator& comm, const GpuType& gpu,
           const ComputeDefaults& defaults, const Calibration& calibration,
           Watchdog* watchdog = nullptr);

  // Plays one step; per instruction its start (from the step start) and duration.
  std::vector<InstructionTiming> play_step(int step);
  // The modelled seconds of each instruction (0 for communication).
  const std::vector<double>& compute_seconds() const { return seconds_; }

 private:
  void run(const Instruction& instruction, std::size_t index);
  // One handler per instruction (run() dispatches; a missing one fails to compile).
  void play(const LoadMicrobatch& in);
  void play(const Forward& in);
  void play(const Backward& in);
  void play(const Send& in);
  void play(const Recv& in);
  void play(const Collective& in);
  void play(const OptimizerStep& in);
  void play(const Wait& in);
  void sleep_compute(int blocks);  // the instruction's modelled seconds, in up to blocks slices

  const Schedule& schedule_;
  const std::vector<Instruction>& stream_;
  int rank_;
  Communicator& comm_;
  Watchdog* watchdog_;
  std::vector<double> seconds_;
  std::vector<float> buffer_;
  // Requests in flight (the schedule's number): the communicator's request and its own buffer
  // (requests in flight never share one), taken from and given back to a pool, so its pages
  // stay resident and the pool peaks at what is in flight at once.
  struct InFlight {
    int comm = -1;
    std::vector<float> buffer;
  };
  std::map<int, InFlight> in_flight_;
  std::vector<std::vector<float>> pool_;
  InFlight& own(int request);  // registers a start; message_ moves to its buffer
  // the instruction being played: its index, its message's floats and where the message is
  std::size_t index_ = 0;
  std::size_t floats_ = 0;
  std::span<float> message_;
};

}  // namespace fabtrain
