// The communicator interface the executor plays collectives and point-to-point transfers on:
// over MPI (mpi_communicator.hpp: CPU, any number of machines, mpirun -H a,b or srun) and over
// NCCL (exec/cuda/nccl_communicator.hpp, built with the CUDA backend). Groups are lists of world
// ranks in ring order (Schedule::groups). A dead peer must turn into an error in bounded time,
// never a hang (the Watchdog ends the job).
// Not here: which call a schedule makes when (interpreter.hpp), measuring them (bench_network.hpp).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fabtrain {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string host() const = 0;
  // Collectives over a group (world ranks, in order), fp32 sum.
  virtual void all_reduce(int group, std::span<float> data) = 0;
  // in: group.size() equal chunks; out: this rank's chunk (reduce-scatter), or the chunks of
  // every rank in order (all-gather). In place when the spans alias exactly so: reduce-scatter
  // with out at the start of in; all-gather with in at this rank's chunk of out.
  virtual void reduce_scatter(int group, std::span<const float> in, std::span<float> out) = 0;
  virtual void all_gather(int group, std::span<const float> in, std::span<float> out) = 0;
  virtual void send(int peer, std::span<const float> data, int tag) = 0;
  virtual void recv(int peer, std::span<float> data, int tag) = 0;
  virtual void barrier() = 0;
  // Registers the schedule's groups (same list on every rank) before first use.
  virtual void set_groups(const std::vector<std::vector<int>>& groups) = 0;
  // Ends the whole job with a message (a rank that hits an error takes the others down).
  [[noreturn]] virtual void abort(const std::string& message) = 0;
};

// The tag of a pipeline transfer: the microbatch and which tensor, so transfers of different
// microbatches between the same two ranks cannot be confused.
inline int message_tag(int mb, bool gradient) { return mb * 2 + (gradient ? 1 : 0); }

}  // namespace fabtrain
