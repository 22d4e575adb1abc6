// The MPI backend of the Communicator (exec/communicator.hpp): one process per rank, launched by
// mpirun or srun, or alone as a single rank. Groups become MPI communicators (one
// MPI_Comm_create_group per schedule group, ranks in ring order). Sends are eager: the data is
// copied and sent with MPI_Isend, so a Send never waits on its peer (the schedule's order relies
// on it); receives block. Not here: which collective runs when (exec/interpreter.cpp), the
// Watchdog (exec/watchdog.hpp).
#pragma once
#include <mpi.h>

#include <deque>
#include <string>
#include <vector>

#include "exec/communicator.hpp"

namespace fabtrain {

class MpiCommunicator final : public Communicator {
 public:
  // Initialises MPI (if not yet) and finalises it in the destructor.
  MpiCommunicator(int* argc, char*** argv);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string host() const override { return host_; }
  // Ranks on this machine and this rank's index among them (for choosing thread counts).
  int local_size() const { return local_size_; }
  int local_rank() const { return local_rank_; }
  std::string library_version() const;

  void all_reduce(int group, std::span<float> data) override;
  void reduce_scatter(int group, std::span<const float> in, std::span<float> out) override;
  void all_gather(int group, std::span<const float> in, std::span<float> out) override;
  void send(int peer, std::span<const float> data, int tag) override;
  void recv(int peer, std::span<float> data, int tag) override;
  void barrier() override;
  void set_groups(const std::vector<std::vector<int>>& groups) override;
  [[noreturn]] void abort(const std::string& message) override;

  // This rank's position in a group (-1 if not a member) and the group's size.
  int position_in(int group) const;
  int group_size(int group) const;

 private:
  MPI_Comm comm_of(int group) const;
  void finish_completed_sends(bool wait_all);

  struct Group {
    std::vector<int> ranks;
    MPI_Comm comm = MPI_COMM_NULL;
    int position = -1;
  };
  struct PendingSend {
    std::vector<float> data;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  bool owns_mpi_ = false;
  std::vector<Group> groups_;
  std::deque<PendingSend> pending_sends_;
};

}  // namespace fabtrain
