// Forking one process per simulation, at most `workers` at a time, and reading the results back
// (see sim_pool.hpp).
#include "sim/sim_pool.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/error.hpp"
#include "sim/sim_process.hpp"
#include "sim/slice_platform.hpp"

namespace fabtrain {
namespace {

// What a job's process writes to its pipe: this header, then error_bytes of the error message.
struct WireHeader {
  int ok = 0;
  double step_time_s = 0, tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0, communication_s = 0;
  std::uint64_t error_bytes = 0;
};

void write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    p += n, size -= std::size_t(n);
  }
}

// In the job's process: simulate, send, and leave without unwinding (what the parent owns is not
// this process's to destroy).
[[noreturn]] void run_job(int fd, Simulator& simulator, const SimPool::Job& job, int j) {
  WireHeader header;
  std::string error;
  try {
    const SimResult r = job(simulator, j);
    header.ok = 1;
    header.step_time_s = r.step_time_s, header.tokens_per_s = r.tokens_per_s;
    header.tflops_per_gpu = r.tflops_per_gpu, header.mfu = r.mfu;
    header.compute_s = r.breakdown.compute_s, header.exposed_comm_s = r.breakdown.exposed_comm_s;
    header.bubble_s = r.breakdown.bubble_s, header.communication_s = r.breakdown.communication_s;
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "the simulation threw something that is not a std::exception";
  }
  header.error_bytes = error.size();
  write_all(fd, &header, sizeof header);
  write_all(fd, error.data(), error.size());
  _exit(0);
}

std::string how_it_died(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("the simulation's process died of signal {} ({}) before sending its result",
                       WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status))
    return fmt::format("the simulation's process exited with status {} before sending its result",
                       WEXITSTATUS(status));
  return "the simulation's process ended before sending its result";
}

SimOutcome decode(const std::string& bytes, int status) {
  SimOutcome out;
  WireHeader header;
  if (bytes.size() >= sizeof header) std::memcpy(&header, bytes.data(), sizeof header);
  if (bytes.size() < sizeof header || bytes.size() != sizeof header + header.error_bytes) {
    out.error = how_it_died(status);
    return out;
  }
  out.ok = header.ok != 0;
  out.step_time_s = header.step_time_s, out.tokens_per_s = header.tokens_per_s;
  out.tflops_per_gpu = header.tflops_per_gpu, out.mfu = header.mfu;
  out.compute_s = header.compute_s, out.exposed_comm_s = header.exposed_comm_s;
  out.bubble_s = header.bubble_s, out.communication_s = header.communication_s;
  out.error = bytes.substr(sizeof header);
  return out;
}

struct Running {
  pid_t pid = -1;
  int fd = -1;
  std::size_t slot = 0;  // index into the jobs
  std::string bytes;     // read so far
};

}  // namespace

SimPool::SimPool(const Slice& slice, const Calibration* calibration, int workers)
    : simulator_(slice),
      calibration_(calibration),
      platform_(&SimProcess::get().platform(slice)),
      workers_(workers > 0 ? workers : std::max(1, int(std::thread::hardware_concurrency()))) {
  platform_->configure(slice, calibration ? *calibration : Calibration{});
}

double SimPool::step_lower_bound(const Schedule& schedule) const {
  return ::fabtrain::step_lower_bound(schedule, simulator_.slice(), *platform_, calibration_);
}

BoundInputs SimPool::bound_inputs(const Schedule& schedule) const {
  return ::fabtrain::bound_inputs(schedule, simulator_.slice(), calibration_);
}

double SimPool::step_lower_bound(const BoundInputs& inputs) const {
  return ::fabtrain::step_lower_bound(inputs, simulator_.slice(), *platform_);
}

PlanFloor SimPool::plan_floor(const ModelSpec& model, int seq, Precision precision) const {
  return PlanFloor(model, simulator_.slice(), *platform_, seq, precision, calibration_);
}

std::vector<SimOutcome> SimPool::run(const std::vector<int>& jobs, const Job& job) {
  std::vector<SimOutcome> out(jobs.size());
  std::vector<Running> running;
  auto start = [&](std::size_t slot) {
    std::fflush(stdout);  // else a child could print the parent's buffered output again
    std::fflush(stderr);
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) {
      out[slot].error =
          fmt::format("cannot create a pipe for a simulation: {}", std::strerror(errno));
      return;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipe_fds[0]);
      for (const auto& other : running) ::close(other.fd);
      run_job(pipe_fds[1], simulator_, job, jobs[slot]);
    }
    ::close(pipe_fds[1]);
    if (pid < 0) {
      ::close(pipe_fds[0]);
      out[slot].error = fmt::format("cannot fork a simulation process: {}", std::strerror(errno));
      return;
    }
    running.push_back({pid, pipe_fds[0], slot, {}});
  };
  std::size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && int(running.size()) < workers_) start(next++);
    if (running.empty()) continue;
    std::vector<pollfd> fds;
    for (const auto& r : running) fds.push_back({r.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      fail("waiting for simulation processes failed: {}", std::strerror(errno));
    }
    for (std::size_t k = fds.size(); k-- > 0;) {
      if (!fds[k].revents) continue;
      Running& r = running[k];
      char chunk[1 << 16];
      const ssize_t n = ::read(r.fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        r.bytes.append(chunk, std::size_t(n));
        continue;
      }
      ::close(r.fd);  // end of the result (or a read error: what came so far is judged)
      int status = 0;
      while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
      }
      out[r.slot] = decode(r.bytes, status);
      running.erase(running.begin() + std::ptrdiff_t(k));
    }
  }
  return out;
}

}  // namespace fabtrain
