// The MPI backend of the Communicator and the instruction watchdog (see mpi_communicator.hpp).
#include "exec/comm/mpi_communicator.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <limits>

#include "exec/comm/mpi_check.hpp"

namespace fabtrain {
namespace {

int checked_count(std::size_t n, const char* what) {
  if (n > std::size_t(std::numeric_limits<int>::max()))
    fail("{} of {} floats exceeds MPI's int count limit", what, n);
  return int(n);
}

}  // namespace

MpiCommunicator::MpiCommunicator(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // The watchdog thread may call MPI_Abort while the main thread is inside MPI.
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    owns_mpi_ = true;
  }
  int level = 0;
  MPI_Query_thread(&level);
  thread_multiple_ = level == MPI_THREAD_MULTIPLE;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int length = 0;
  MPI_CHECK(MPI_Get_processor_name(name, &length));
  host_.assign(name, length);
  MPI_Comm local;
  MPI_CHECK(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  MPI_CHECK(MPI_Comm_size(local, &local_size_));
  MPI_Comm_free(&local);
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &poke_comm_));
  set_progress(thread_multiple_ ? MpiProgress::thread : MpiProgress::test);
}

MpiCommunicator::~MpiCommunicator() {
  stop_progress_thread();
  finish_completed_sends(true);
  for (auto& [id, s] : started_)
    if (s.request != MPI_REQUEST_NULL) MPI_Wait(&s.request, MPI_STATUS_IGNORE);
  if (poke_comm_ != MPI_COMM_NULL) MPI_Comm_free(&poke_comm_);
  for (auto& g : groups_)
    if (g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
  if (owns_mpi_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
}

std::string MpiCommunicator::library_version() const {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, length);
  if (auto cut = s.find_first_of(",\n"); cut != std::string::npos) s.resize(cut);
  return s;
}

void MpiCommunicator::set_groups(const std::vector<std::vector<int>>& groups) {
  for (auto& g : groups_)
    if (g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
  groups_.clear();
  MPI_Group world_group;
  MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  // Every rank walks the groups in the same order and joins those it belongs to, so the
  // collective creations of overlapping groups cannot wait on each other in a cycle.
  for (std::size_t i = 0; i < groups.size(); ++i) {
    Group g;
    g.ranks = groups[i];
    for (std::size_t k = 0; k < g.ranks.size(); ++k) {
      if (g.ranks[k] < 0 || g.ranks[k] >= size_)
        fail("group {} names rank {}, but the job has {} ranks", i, g.ranks[k], size_);
      if (g.ranks[k] == rank_) g.position = int(k);
    }
    if (g.position >= 0) {
      MPI_Group sub;
      MPI_CHECK(MPI_Group_incl(world_group, int(g.ranks.size()), g.ranks.data(), &sub));
      MPI_CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, sub, int(i), &g.comm));
      MPI_Group_free(&sub);
      MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
    }
    groups_.push_back(std::move(g));
  }
  MPI_Group_free(&world_group);
}

MPI_Comm MpiCommunicator::comm_of(int group) const {
  if (group < 0 || group >= int(groups_.size()))
    fail("collective on group {}, but {} groups are registered", group, groups_.size());
  if (groups_[group].comm == MPI_COMM_NULL)
    fail("rank {} is not a member of group {}", rank_, group);
  return groups_[group].comm;
}

int MpiCommunicator::position_in(int group) const {
  if (group < 0 || group >= int(groups_.size())) return -1;
  return groups_[group].position;
}

int MpiCommunicator::group_size(int group) const {
  if (group < 0 || group >= int(groups_.size())) return 0;
  return int(groups_[group].ranks.size());
}

namespace {
// The whole buffer of a reduce-scatter (input) or all-gather (output) is n equal chunks.
void check_chunks(const char* op, const char* side, std::size_t n, std::size_t whole,
                  std::size_t chunk) {
  if (whole != chunk * n)
    fail("{} over {} ranks: {} of {} floats is not {} chunks of {}", op, n, side, whole, n, chunk);
}
}  // namespace

// Started and waited at once: the blocking all-reduce runs libnbc's algorithm, as the started one
// and the bench do (its ring: coll_libnbc_iallreduce_algorithm 1). Open MPI's blocking call (the
// tuned component's ring) moved a 2-rank all-reduce across a 103 ms link at half the connection's
// window rate: the pipeshard's 205 MB tied-embedding sum took 15.1 s with it, 7.9-8.3 s with
// libnbc's ring (GPT-2 medium, scripts/validate-emulated.sh --full-size). MPI_Wait progresses it,
// so the progress thread stays asleep.
void MpiCommunicator::all_reduce(int group, std::span<float> data) {
  MPI_Comm comm = comm_of(group);
  MPI_Request r;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data.data(), checked_count(data.size(), "all-reduce"),
                           MPI_FLOAT, MPI_SUM, comm, &r));
  MPI_CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
}

void MpiCommunicator::reduce_scatter(int group, std::span<const float> in, std::span<float> out) {
  MPI_Comm comm = comm_of(group);
  const std::size_t n = groups_[group].ranks.size();
  check_chunks("reduce-scatter", "input", n, in.size(), out.size());
  // MPI_Reduce_scatter with equal counts, not _block: Open MPI's tuned component has a ring for
  // it (coll_tuned_reduce_scatter_algorithm 3), the algorithm NCCL and the simulator play.
  const void* send = in.data() == out.data() ? MPI_IN_PLACE : in.data();
  const std::vector<int> counts(n, checked_count(out.size(), "reduce-scatter chunk"));
  MPI_CHECK(MPI_Reduce_scatter(send, out.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm));
}

void MpiCommunicator::all_gather(int group, std::span<const float> in, std::span<float> out) {
  MPI_Comm comm = comm_of(group);
  const std::size_t n = groups_[group].ranks.size();
  check_chunks("all-gather", "output", n, out.size(), in.size());
  const bool in_place = in.data() == out.data() + std::size_t(groups_[group].position) * in.size();
  MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : in.data(),
                          checked_count(in.size(), "all-gather chunk"), MPI_FLOAT, out.data(),
                          int(in.size()), MPI_FLOAT, comm));
}

void MpiCommunicator::finish_completed_sends(bool wait_all) {
  while (!pending_sends_.empty()) {
    int done = 0;
    if (wait_all) {
      MPI_CHECK(MPI_Wait(&pending_sends_.front().request, MPI_STATUS_IGNORE));
      done = 1;
    } else {
      MPI_CHECK(MPI_Test(&pending_sends_.front().request, &done, MPI_STATUS_IGNORE));
    }
    if (!done) return;
    pending_sends_.pop_front();
  }
}

void MpiCommunicator::send(int peer, std::span<const float> data, int tag) {
  if (peer < 0 || peer >= size_) fail("send to rank {}, but the job has {} ranks", peer, size_);
  finish_completed_sends(false);
  PendingSend& s = pending_sends_.emplace_back();
  s.data.assign(data.begin(), data.end());
  MPI_CHECK(MPI_Isend(s.data.data(), checked_count(s.data.size(), "send"), MPI_FLOAT, peer, tag,
                      MPI_COMM_WORLD, &s.request));
}

void MpiCommunicator::recv(int peer, std::span<float> data, int tag) {
  if (peer < 0 || peer >= size_)
    fail("receive from rank {}, but the job has {} ranks", peer, size_);
  MPI_Status status;
  MPI_CHECK(MPI_Recv(data.data(), checked_count(data.size(), "receive"), MPI_FLOAT, peer, tag,
                     MPI_COMM_WORLD, &status));
  int count = 0;
  MPI_Get_count(&status, MPI_FLOAT, &count);
  if (std::size_t(count) != data.size())
    fail("rank {} received {} floats from rank {} (tag {}), expected {}", rank_, count, peer, tag,
         data.size());
  finish_completed_sends(false);
}

void MpiCommunicator::barrier() {
  finish_completed_sends(true);
  MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

MpiProgress parse_mpi_progress(const std::string& text) {
  if (text == "thread") return MpiProgress::thread;
  if (text == "test") return MpiProgress::test;
  if (text == "none") return MpiProgress::none;
  fail("MPI progress '{}' is not one of thread, test, none", text);
}

const char* to_string(MpiProgress p) {
  switch (p) {
    case MpiProgress::thread:
      return "thread";
    case MpiProgress::test:
      return "test";
    case MpiProgress::none:
      return "none";
  }
  return "?";
}

void MpiCommunicator::set_progress(MpiProgress mode, int poll_us) {
  if (poll_us < 1) fail("MPI progress poll of {} us: at least 1", poll_us);
  if (!started_.empty()) fail("MPI progress changed with {} requests in flight", started_.size());
  if (mode == MpiProgress::thread && !thread_multiple_)
    fail("MPI progress thread needs MPI_THREAD_MULTIPLE, which {} does not provide",
         library_version());
  stop_progress_thread();
  progress_ = mode;
  poll_us_ = poll_us;
  if (mode == MpiProgress::thread) {
    stop_thread_ = false;
    progress_thread_ = std::thread([this] { progress_loop(); });
  }
}

void MpiCommunicator::stop_progress_thread() {
  if (!progress_thread_.joinable()) return;
  {
    std::lock_guard lock(progress_mutex_);
    stop_thread_ = true;
  }
  progress_changed_.notify_all();
  progress_thread_.join();
}

void MpiCommunicator::poke() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, poke_comm_, &flag, MPI_STATUS_IGNORE);
}

// While requests are in flight: poke MPI, then yield the core for a moment (the rank's compute
// shares it). Sleeps on the condition variable while none are.
void MpiCommunicator::progress_loop() {
  std::unique_lock lock(progress_mutex_);
  while (!stop_thread_) {
    if (in_flight_.load() == 0) {
      progress_changed_.wait(lock);
      continue;
    }
    lock.unlock();
    poke();
    std::this_thread::sleep_for(std::chrono::microseconds(poll_us_));
    lock.lock();
  }
}

int MpiCommunicator::add_request(MPI_Request request, std::span<float> recv, int peer, int tag,
                                 std::vector<int> counts) {
  const int id = next_request_++;
  Started& s = started_[id];
  s.request = request;
  s.recv = recv;
  s.peer = peer;
  s.tag = tag;
  s.counts = std::move(counts);
  if (in_flight_.fetch_add(1) == 0 && progress_ == MpiProgress::thread) {
    std::lock_guard lock(progress_mutex_);
    progress_changed_.notify_all();
  }
  return id;
}

int MpiCommunicator::start_all_reduce(int group, std::span<float> data) {
  MPI_Comm comm = comm_of(group);
  MPI_Request r;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data.data(), checked_count(data.size(), "all-reduce"),
                           MPI_FLOAT, MPI_SUM, comm, &r));
  return add_request(r, {}, -1, -1);
}

int MpiCommunicator::start_reduce_scatter(int group, std::span<const float> in,
                                          std::span<float> out) {
  MPI_Comm comm = comm_of(group);
  const std::size_t n = groups_[group].ranks.size();
  check_chunks("reduce-scatter", "input", n, in.size(), out.size());
  // Equal counts, as the blocking call (MPI_Reduce_scatter, not _block).
  std::vector<int> counts(n, checked_count(out.size(), "reduce-scatter chunk"));
  const void* send = in.data() == out.data() ? MPI_IN_PLACE : in.data();
  MPI_Request r;
  MPI_CHECK(MPI_Ireduce_scatter(send, out.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm, &r));
  return add_request(r, {}, -1, -1, std::move(counts));
}

int MpiCommunicator::start_all_gather(int group, std::span<const float> in, std::span<float> out) {
  MPI_Comm comm = comm_of(group);
  const std::size_t n = groups_[group].ranks.size();
  check_chunks("all-gather", "output", n, out.size(), in.size());
  const bool in_place = in.data() == out.data() + std::size_t(groups_[group].position) * in.size();
  MPI_Request r;
  MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : in.data(),
                           checked_count(in.size(), "all-gather chunk"), MPI_FLOAT, out.data(),
                           int(in.size()), MPI_FLOAT, comm, &r));
  return add_request(r, {}, -1, -1);
}

int MpiCommunicator::start_send(int peer, std::span<const float> data, int tag) {
  if (peer < 0 || peer >= size_) fail("send to rank {}, but the job has {} ranks", peer, size_);
  MPI_Request r;
  MPI_CHECK(MPI_Isend(data.data(), checked_count(data.size(), "send"), MPI_FLOAT, peer, tag,
                      MPI_COMM_WORLD, &r));
  return add_request(r, {}, -1, -1);
}

int MpiCommunicator::start_recv(int peer, std::span<float> data, int tag) {
  if (peer < 0 || peer >= size_)
    fail("receive from rank {}, but the job has {} ranks", peer, size_);
  MPI_Request r;
  MPI_CHECK(MPI_Irecv(data.data(), checked_count(data.size(), "receive"), MPI_FLOAT, peer, tag,
                      MPI_COMM_WORLD, &r));
  return add_request(r, data, peer, tag);
}

void MpiCommunicator::wait(int request) {
  auto it = started_.find(request);
  if (it == started_.end()) unknown_request(request);
  Started s = std::move(it->second);
  started_.erase(it);
  MPI_Status status;
  const int rc = MPI_Wait(&s.request, &status);
  in_flight_.fetch_sub(1);
  MPI_CHECK(rc);
  if (s.peer >= 0) {
    int count = 0;
    MPI_Get_count(&status, MPI_FLOAT, &count);
    if (std::size_t(count) != s.recv.size())
      fail("rank {} received {} floats from rank {} (tag {}), expected {}", rank_, count, s.peer,
           s.tag, s.recv.size());
  }
}

void MpiCommunicator::progress() {
  if (progress_ == MpiProgress::test && in_flight_.load() > 0) poke();
}

bool MpiCommunicator::can_overlap() const { return progress_ != MpiProgress::none; }

std::string MpiCommunicator::overlap_note() const {
  if (progress_ == MpiProgress::none)
    return "MPI progress 'none': started requests advance only inside wait(), after the compute";
  return "";
}

void MpiCommunicator::abort(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: rank %d (%s): %s\n", rank_, host_.c_str(), message.c_str());
  std::fflush(stderr);
  // If MPI_Abort itself cannot finish (a broken transport), the alarm ends this process.
  alarm(20);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

}  // namespace fabtrain
