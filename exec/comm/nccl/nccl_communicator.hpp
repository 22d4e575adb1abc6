// The NCCL backend of the Communicator (exec/comm/communicator.hpp) for the CUDA backend: one
// process per GPU, launched like the MPI backend (mpirun / srun, one or many machines). MPI does
// the bootstrap: rank 0's ncclUniqueId is broadcast over MPI, the device is the node-local rank's
// (MPI_COMM_TYPE_SHARED split, MpiCommunicator::local_rank), and barrier/abort go through MPI.
// Each schedule group becomes an NCCL communicator split from the world one (the world one
// itself for a group of every rank in order), ranks in ring order; a single-rank job makes none
// (exec/backends/cuda_backend.cpp). Collectives run on their own stream; each point-to-point
// edge (sender -> receiver) on a queue of its own: a two-rank communicator and a stream per
// colour of edge (nccl_ordering.hpp), set up and connected by connect_peers() before the first
// step, so no transfer waits behind another edge's and no first transfer waits for its peer to
// reach its own. A blocking send() is eager (staged and queued, completed on the device
// when the peer receives; its device span is used in place and must not change before the next
// barrier); blocking recv and collectives are a start and its wait.
// Non-blocking calls (start_*) follow request_steps (nccl_ordering.hpp): host inputs staged on a
// copy stream, the request's stream ordered after the compute stream's kernels (cuda_device.hpp:
// compute_stream), the NCCL call, a completion event; wait() synchronises on that event and
// only then copies host outputs back, so no start blocks the host. Staging buffers come from a
// grow-only pool and events from a free list: after the first step nothing is allocated or freed.
// NCCL progresses on the device: can_overlap(). Not here: which collective runs when
// (exec/play/interpreter.cpp).
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
  bool takes_device_memory() const override { return true; }
  std::string overlap_note() const override { return ""; }
  std::string name() const override { return "nccl"; }
  void set_groups(const std::vector<std::vector<int>>& groups) override;
  void connect_peers(const std::vector<int>& peers) override;
  [[noreturn]] void abort(const std::string& message) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabtrain::cuda
