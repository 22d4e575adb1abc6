// Watchdog (see watchdog.hpp).
#include "exec/comm/watchdog.hpp"

#include <fmt/format.h>

namespace fabtrain {

Watchdog::Watchdog(Communicator& comm, double timeout_s) : comm_(comm), timeout_s_(timeout_s) {
  if (timeout_s_ > 0) thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::begin(const std::string& what) {
  std::lock_guard lock(mutex_);
  active_ = true;
  what_ = what;
  since_ = std::chrono::steady_clock::now();
}

void Watchdog::end() {
  std::lock_guard lock(mutex_);
  active_ = false;
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  const auto poll = std::chrono::milliseconds(timeout_s_ < 5 ? 100 : 1000);
  while (!stop_) {
    wake_.wait_for(lock, poll);
    if (stop_ || !active_) continue;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
    if (waited > timeout_s_) {
      const std::string message = fmt::format(
          "'{}' has been blocked for {:.0f} s (over --timeout-s {}): a peer rank probably died "
          "or is stuck; ending the job",
          what_, waited, timeout_s_);
      lock.unlock();
      comm_.abort(message);
    }
  }
}

}  // namespace fabtrain
