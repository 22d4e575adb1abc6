// A Communicator whose ranks are threads of one process (exec/comm/communicator.hpp): one
// LoopbackHub shared by `size` LoopbackCommunicator objects, each used by its own thread. It
// lets a test play any plan's schedule on every rank without mpirun. Collectives sum in group
// order, so every member gets the same bits; sends are eager (copied into the peer's mailbox,
// never waiting), receives wait. A rank that aborts, or waits longer than the hub's timeout,
// makes every waiting rank fail too: a test never hangs.
// Non-blocking calls overlap for real: a started collective completes when the last member of
// its group starts it (that thread sums, in group order, into every member's output: the same
// bits as the blocking call), without waiting for anyone's wait(); wait() waits for that. A
// started send is the eager send; a started receive is deferred to its wait (the mailbox holds
// the message, so no sender ever waits on it). Not here: MPI, timing fidelity.
#pragma once
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "exec/comm/communicator.hpp"

namespace fabtrain {

class LoopbackHub {
 public:
  explicit LoopbackHub(int size, double timeout_s = 120);
  int size() const { return size_; }

 private:
  friend class LoopbackCommunicator;
  struct Group {
    std::vector<int> ranks;
    std::vector<const float*> posted;  // by position: the member's input of this round
    int arrived = 0;
    long round = 0;  // rendezvous generation
  };
  // A started collective: group g's seq-th, by position what each member posted.
  enum class Op { all_reduce, reduce_scatter, all_gather };
  struct Started {
    Op op = Op::all_reduce;
    std::vector<std::span<const float>> in;
    std::vector<std::span<float>> out;
    int arrived = 0, waited = 0;
    bool done = false;
  };
  // Posts a member's part; the last one computes every output. Returns the sequence number.
  long start(int group, int rank, Op op, std::span<const float> in, std::span<float> out);
  void finish(Started& started, int size);
  // Waits (holding `lock`) until `done`, the hub aborting (throws) or the timeout (aborts, throws).
  template <typename Done>
  void wait(std::unique_lock<std::mutex>& lock, int rank, const char* what, Done done);
  // Everyone of the group arrives; returns when all have (the group's round has advanced).
  void rendezvous(std::unique_lock<std::mutex>& lock, Group& group, int rank, const char* what);
  Group& group(int index, int rank);
  [[noreturn]] void fail_all(const std::string& message);

  int size_;
  double timeout_s_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string aborted_;  // the first abort's message; non-empty: every wait fails
  std::vector<Group> groups_;
  Group world_;
  bool groups_set_ = false;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<float>>> mail_;  // (from, to, tag)
  std::map<std::pair<int, long>, Started> started_;                           // (group, seq)
  std::map<std::pair<int, int>, long> next_seq_;                              // (group, rank)
};

class LoopbackCommunicator final : public Communicator {
 public:
  LoopbackCommunicator(LoopbackHub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_.size(); }
  std::string host() const override { return "loopback"; }
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
  std::string name() const override { return "loopback"; }
  void set_groups(const std::vector<std::vector<int>>& groups) override;
  [[noreturn]] void abort(const std::string& message) override;
  // Whether its spans stand for a device's memory: a test's host memory behind a backend that
  // keeps its buffers off the host, so that the interpreter's device paths run on the CPU.
  void set_takes_device_memory(bool on) { device_memory_ = on; }
  bool takes_device_memory() const override { return device_memory_; }

 private:
  bool device_memory_ = false;
  struct Request {
    int group = -1;  // a collective: (group, seq) in the hub
    long seq = 0;
    std::span<float> recv;  // a deferred receive (group -1)
    int peer = -1, tag = 0;
  };
  std::map<int, Request> requests_;
  int next_request_ = 0;

  // The collective skeleton: post `in`, meet, compute this rank's result from every member's
  // input (by position), meet again (nobody reads inputs any more), then write the result.
  template <typename Compute, typename Write>
  void collective(int group, const float* in, const char* what, Compute compute, Write write);
  LoopbackHub& hub_;
  int rank_;
};

}  // namespace fabtrain
