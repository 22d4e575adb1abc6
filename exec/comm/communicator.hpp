// The communicator interface the executor plays collectives and point-to-point transfers on:
// over MPI (mpi_communicator.hpp: CPU, any number of machines, mpirun -H a,b or srun) and over
// NCCL (exec/comm/nccl/nccl_communicator.hpp, built with the CUDA backend). Groups are lists of
// world ranks in ring order (Schedule::groups). A dead peer must turn into an error in bounded
// time, never a hang (the Watchdog ends the job).
//
// Non-blocking calls (start_*) return a request handle (>= 0) that wait() completes; until then
// the spans stay valid and nobody touches them. A communicator whose start_* cannot progress
// while its rank computes says so: can_overlap() false and overlap_note() why. The defaults
// here are such a communicator: they run the blocking call at once and return a finished
// request. progress() is the hook the interpreter calls between kernels (blocks), for a
// communicator that progresses only inside its own calls. Waiting on a request that was not
// started, or twice, is an error naming the request.
// Not here: which call a schedule makes when (interpreter.hpp), measuring them (bench_network.hpp).
#pragma once
#include <memory>
#include <set>
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
  // Non-blocking versions of the five calls above (same arguments and aliasing rules).
  virtual int start_all_reduce(int group, std::span<float> data);
  virtual int start_reduce_scatter(int group, std::span<const float> in, std::span<float> out);
  virtual int start_all_gather(int group, std::span<const float> in, std::span<float> out);
  virtual int start_send(int peer, std::span<const float> data, int tag);
  virtual int start_recv(int peer, std::span<float> data, int tag);
  // Completes a started request (its buffers are the caller's again).
  virtual void wait(int request);
  // Lets started requests advance (called between blocks of compute); cheap when none are.
  virtual void progress() {}
  // Whether started requests advance while the rank computes; if not, overlap_note() says why.
  virtual bool can_overlap() const { return false; }
  virtual std::string overlap_note() const {
    return "its non-blocking calls complete when they start (no overlap)";
  }
  // Whether spans may be device memory (a GPU's), used in place; else they must be host memory.
  virtual bool takes_device_memory() const { return false; }
  // Short name for messages ("mpi", "nccl", "loopback").
  virtual std::string name() const { return "unnamed"; }
  // Registers the schedule's groups (same list on every rank) before first use.
  virtual void set_groups(const std::vector<std::vector<int>>& groups) = 0;
  // Sets up the point-to-point connections with the ranks this one sends to or receives from
  // (the schedule's Send and Recv peers), before the first step. Every rank calls it once, at
  // the same point (it may be collective); a no-op where connections need no setup.
  virtual void connect_peers(const std::vector<int>& peers) {}
  // Ends the whole job with a message (a rank that hits an error takes the others down).
  [[noreturn]] virtual void abort(const std::string& message) = 0;

 protected:
  // The default start_* bookkeeping: a request finished when issued.
  int finished_request();
  // Fails naming the request and the communicator (wait on one not started, or waited twice).
  [[noreturn]] void unknown_request(int request) const;

 private:
  std::set<int> finished_;
  int next_finished_ = 0;
};

// The tag of a pipeline transfer: the microbatch and which tensor, so transfers of different
// microbatches between the same two ranks cannot be confused.
inline int message_tag(int mb, bool gradient) { return mb * 2 + (gradient ? 1 : 0); }

}  // namespace fabtrain
