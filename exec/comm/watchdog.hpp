// The Watchdog: ends the job with a message when the current wait on peers (a communication
// instruction, a checkpoint's barrier, a gather of timings) has lasted longer than a timeout, so a
// dead or stuck peer never hangs the others. Compute is not watched: a long forward pass is not a
// dead peer. It works on any Communicator (abort takes the job down) and needs no MPI. Not here:
// the communicators.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "exec/comm/communicator.hpp"

namespace fabtrain {

// The watched code calls begin("what") / end() around a wait (or holds a WatchedWait); a
// background thread checks once per poll interval. timeout_s <= 0: never fires.
class Watchdog {
 public:
  Watchdog(Communicator& comm, double timeout_s);
  ~Watchdog();
  void begin(const std::string& what);
  void end();

 private:
  void watch();
  Communicator& comm_;
  double timeout_s_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool active_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point since_;
  std::thread thread_;
};

// Watches one wait for as long as it lives (also when the wait throws); a null watchdog watches
// nothing.
class WatchedWait {
 public:
  WatchedWait(Watchdog* watchdog, const std::string& what) : watchdog_(watchdog) {
    if (watchdog_) watchdog_->begin(what);
  }
  ~WatchedWait() {
    if (watchdog_) watchdog_->end();
  }
  WatchedWait(const WatchedWait&) = delete;
  WatchedWait& operator=(const WatchedWait&) = delete;

 private:
  Watchdog* watchdog_;
};

}  // namespace fabtrain
