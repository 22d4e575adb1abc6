// The Watchdog: ends the job with a message when the current activity (one instruction) has run
// longer than a timeout, so a dead or stuck peer never hangs the others. It works on any
// Communicator (abort takes the job down) and needs no MPI. Not here: the communicators.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "exec/comm/communicator.hpp"

namespace fabtrain {

// The watched code calls begin("what") / end(); a background thread checks once per poll
// interval. timeout_s <= 0: never fires.
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

}  // namespace fabtrain
