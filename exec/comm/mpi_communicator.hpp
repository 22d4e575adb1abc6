// The MPI backend of the Communicator (exec/comm/communicator.hpp): one process per rank, launched
// by mpirun or srun, or alone as a single rank. Groups become MPI communicators (one
// MPI_Comm_create_group per schedule group, ranks in ring order). Sends are eager: the data is
// copied and sent with MPI_Isend, so a Send never waits on its peer (the schedule's order relies
// on it); receives block.
//
// Non-blocking calls are MPI_Iallreduce, MPI_Ireduce_scatter, MPI_Iallgather, MPI_Isend and
// MPI_Irecv. Open MPI advances them only inside MPI calls, so something must call into MPI while
// the rank computes; MpiProgress says what (docs/validation.md, "Overlap": both were measured,
// the default is the faster): a progress thread that pokes MPI (MPI_Iprobe on a private
// communicator) while requests are in flight, or the interpreter's progress() calls between blocks.
// none: nothing (the requests advance only in wait(); can_overlap() is false then). Not here: which
// collective runs when (exec/play/interpreter.cpp), the Watchdog (exec/comm/watchdog.hpp).
#pragma once
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/comm/communicator.hpp"

namespace fabtrain {

enum class MpiProgress { thread, test, none };
MpiProgress parse_mpi_progress(const std::string& text);  // "thread" | "test" | "none"
const char* to_string(MpiProgress p);

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
  int start_all_reduce(int group, std::span<float> data) override;
  int start_reduce_scatter(int group, std::span<const float> in, std::span<float> out) override;
  int start_all_gather(int group, std::span<const float> in, std::span<float> out) override;
  int start_send(int peer, std::span<const float> data, int tag) override;
  int start_recv(int peer, std::span<float> data, int tag) override;
  void wait(int request) override;
  void progress() override;
  bool can_overlap() const override;
  std::string overlap_note() const override;
  std::string name() const override { return "mpi"; }
  // How started requests advance (default: the kept one, see the file comment). Call it with no
  // request in flight.
  // poll_us: the progress thread's pause between pokes.
  void set_progress(MpiProgress mode, int poll_us = 500);
  MpiProgress progress_mode() const { return progress_; }
  void set_groups(const std::vector<std::vector<int>>& groups) override;
  [[noreturn]] void abort(const std::string& message) override;

  // This rank's position in a group (-1 if not a member) and the group's size.
  int position_in(int group) const;
  int group_size(int group) const;

 private:
  MPI_Comm comm_of(int group) const;
  void finish_completed_sends(bool wait_all);
  int add_request(MPI_Request request, std::span<float> recv, int peer, int tag,
                  std::vector<int> counts = {});
  void poke();  // one call into MPI's progress engine
  void progress_loop();
  void stop_progress_thread();

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

  struct Started {
    MPI_Request request = MPI_REQUEST_NULL;
    std::span<float> recv;  // a receive's buffer (its count is checked in wait)
    int peer = -1, tag = -1;
    std::vector<int> counts;  // MPI_Ireduce_scatter's counts live until completion
  };
  std::map<int, Started> started_;
  int next_request_ = 0;
  bool thread_multiple_ = false;
  MpiProgress progress_ = MpiProgress::thread;
  MPI_Comm poke_comm_ = MPI_COMM_NULL;  // no traffic: MPI_Iprobe on it only runs progress
  std::mutex progress_mutex_;
  std::condition_variable progress_changed_;
  std::atomic<int> in_flight_{0};
  bool stop_thread_ = false;
  int poll_us_ =
      500;  // docs/results/2026-12-01-overlap.md: 50 us stole the compute's core, 2 ms let TCP idle
  std::thread progress_thread_;
};

}  // namespace fabtrain
