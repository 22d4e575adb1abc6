#include "selector/worker_pool.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.hpp"
#include "selector/enumerate.hpp"
#include "sim/simulator.hpp"

namespace fabtrain {
namespace {

void write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n <= 0) _exit(3);
    p += n, size -= size_t(n);
  }
}

WireResult simulate_one(Simulator& sim, const ModelSpec& model, const Candidate& c, int seq,
                        const Calibration* calibration, int index) {
  WireResult w;
  w.index = index;
  try {
    SimOptions so;
    so.calibration = calibration;
    const SimResult r = sim.run(model, compile(model, c.plan, c.global_batch, seq), so);
    w.ok = 1;
    w.step_time_s = r.step_time_s, w.tokens_per_s = r.tokens_per_s;
    w.tflops_per_gpu = r.tflops_per_gpu, w.mfu = r.mfu;
    w.compute_s = r.breakdown.compute_s, w.exposed_comm_s = r.breakdown.exposed_comm_s;
    w.bubble_s = r.breakdown.bubble_s;
  } catch (const std::exception& e) {
    std::strncpy(w.error, e.what(), sizeof w.error - 1);
  }
  return w;
}

// simulate_one in a child of the worker that has never run: SimGrid's clock starts at 0 there, so
// a plan's numbers do not depend on which plans the worker simulated before (a clock that kept
// running changed the last digits, and plan --json differed between runs).
WireResult simulate_fresh(Simulator& sim, const ModelSpec& model, const Candidate& c, int seq,
                          const Calibration* calibration, int index) {
  WireResult r;
  r.index = index;
  int result[2];
  if (::pipe(result) != 0) {
    std::snprintf(r.error, sizeof r.error, "cannot create a pipe: %s", std::strerror(errno));
    return r;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(result[0]);
    const WireResult mine = simulate_one(sim, model, c, seq, calibration, index);
    write_all(result[1], &mine, sizeof mine);
    _exit(0);
  }
  ::close(result[1]);
  std::size_t got = 0;
  while (pid > 0 && got < sizeof r) {
    const ssize_t n = ::read(result[0], reinterpret_cast<char*>(&r) + got, sizeof r - got);
    if (n <= 0) break;
    got += std::size_t(n);
  }
  ::close(result[0]);
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  if (got != sizeof r) {
    r = WireResult{};
    r.index = index;
    std::snprintf(r.error, sizeof r.error, "the simulation of this plan died (%s)",
                  pid < 0 ? std::strerror(errno) : "signal or exit without a result");
  }
  return r;
}

}  // namespace

WorkerPool::WorkerPool(int count, const ModelSpec& model, const Slice& slice,
                       const std::vector<Candidate>& candidates, int seq, const Calibration* calibration) {
  std::fflush(stdout);  // else each child would print the parent's buffered output again
  std::fflush(stderr);
  for (int w = 0; w < count; ++w) {
    int to_child[2], from_child[2];
    if (::pipe(to_child) != 0 || ::pipe(from_child) != 0)
      fail("cannot create pipes for search workers: {}", std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) fail("cannot fork search workers: {}", std::strerror(errno));
    if (pid == 0) {
      ::close(to_child[1]);
      ::close(from_child[0]);
      for (const auto& other : workers_) ::close(other.to), ::close(other.from);
      Simulator sim(slice);
      int index;
      while (::read(to_child[0], &index, sizeof index) == sizeof index) {
        const WireResult r = simulate_fresh(sim, model, candidates[index], seq, calibration, index);
        write_all(from_child[1], &r, sizeof r);
      }
      _exit(0);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    workers_.push_back({pid, to_child[1], from_child[0]});
  }
}
WorkerPool::~WorkerPool() {
  for (auto& w : workers_) {
    ::close(w.to);
    ::close(w.from);
    int status = 0;
    ::waitpid(w.pid, &status, 0);
  }
}
int WorkerPool::wait_any(const std::vector<int>& busy) {
  std::vector<pollfd> fds;
  std::vector<int> who;
  for (int w = 0; w < size(); ++w)
    if (busy[w]) fds.push_back({workers_[w].from, POLLIN, 0}), who.push_back(w);
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      fail("waiting for search workers failed: {}", std::strerror(errno));
    for (size_t k = 0; k < fds.size(); ++k)
      if (fds[k].revents) return who[k];
  }
}
void WorkerPool::send(int worker, int index) {
  write_all(workers_[worker].to, &index, sizeof index);
}
WireResult WorkerPool::receive(int worker) {
  WireResult r;
  size_t got = 0;
  while (got < sizeof r) {
    const ssize_t n =
        ::read(workers_[worker].from, reinterpret_cast<char*>(&r) + got, sizeof r - got);
    if (n <= 0) fail("a search worker died; rerun with --workers 1 to see why");
    got += size_t(n);
  }
  return r;
}

}  // namespace fabtrain
