// The NCCL backend of the Communicator (exec/comm/communicator.hpp) for the CUDA backend: one
// process per GPU, launched like the MPI backend (mpirun / srun, one or many machines). MPI does
// the bootstrap: rank 0's ncclUniqueId is broadcast over MPI, the device is the node-local rank's
// (MPI_COMM_TYPE_SHARED split, MpiCommunicator::local_rank), and barrier/abort go through MPI.
// Each schedule group becomes an NCCL communicator split from the world one, ranks in ring
// order. Collectives run on their own stream; point-to-point transfers run on two more
// communicators and streams, one per direction (to higher ranks, to lower ranks), so a Send is
// queued and returns at once (eager, as the schedule's order requires) while the matching Recv
// in the other direction can still proceed. Spans may be host memory (the stage's mirrors:
// staged through device buffers) or device memory (used in place).
// Non-blocking calls (start_*) run on the same streams, after an event recorded on the compute
// stream (set_compute_stream; default the legacy default stream), so they see every kernel
// queued before them (the CUDA stage's kernels run on a stream of their own, but the interpreter
// synchronises the stage after every instruction, so nothing is queued when a start is made); each
// request records its own completion event, and wait() synchronises on it (host spans are copied
// back by then). Host spans are staged in the request's own device buffers, so requests in flight
// never share one. NCCL progresses on the device: can_overlap(). Not here: which collective runs
// when (exec/play/interpreter.cpp).
#pragma once
#include <cuda_runtime.h>

#include <memory>

#include "exec/comm/communicator.hpp"
#include "exec/comm/mpi_communicator.hpp"

namespace fabtrain::cuda {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over all ranks of mpi: selects this rank's device and creates the world comm.
  explicit NcclCommunicator(MpiCommunicator& mpi);
  ~NcclCommunicator() override;

  int rank() const override;
  int size() const override;
  std::string host() const override;
  int device() const;
  std::string version() const;  // "NCCL 2.28.x"

  void all_reduce(int group, std::span<float> data) override;
  void reduce_scatter(int group, std::span<const float> in, std::span<float> out) override;
  void all_gather(int group, std::span<const float> in, std::span<float> out) override;
  void send(int peer, std::span<const float> data, int tag) override;
  void recv(int peer, std::span<float> data, int tag) override;
  void barrier() override;
  int start_all_reduce(int group, std::span<float> data) override;
  int start_reduce_scatter(int group, std::span<const float> in, std::span<float> out) override;
  int start_all_gather(int group, std::span<const float> in, std::span<float> out) override;
  int start_send(int peer, std::span<const float> data, int tag) override;
  int start_recv(int peer, std::span<float> data, int tag) override;
  void wait(int request) override;
  bool can_overlap() const override { return true; }
  std::string overlap_note() const override { return ""; }
  std::string name() const override { return "nccl"; }
  // The stream the stage's kernels run on: started requests wait for its queued work.
  void set_compute_stream(cudaStream_t stream);
  void set_groups(const std::vector<std::vector<int>>& groups) override;
  [[noreturn]] void abort(const std::string& message) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabtrain::cuda
