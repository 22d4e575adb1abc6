// Clock alignment on two in-process ranks (threads over a queue communicator): rank 1 leaves the
// start barrier 30 ms after rank 0, so its clock's origin is 30 ms late, and align_clocks must
// measure that offset (within the ping's round trip) and map both ranks onto one time line.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/comm/clock_alignment.hpp"

using namespace fabtrain;

namespace {

// Point-to-point messages and a barrier between threads; rank 1's barrier returns late.
struct Mailboxes {
  std::mutex m;
  std::condition_variable cv;
  std::map<std::pair<int, int>, std::deque<std::vector<float>>> queues;  // (from, to)
  int arrived = 0, generation = 0;
};

class ThreadComm : public Communicator {
 public:
  ThreadComm(Mailboxes& box, int rank, std::chrono::milliseconds barrier_delay)
      : box_(box), rank_(rank), delay_(barrier_delay) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  std::string host() const override { return "test"; }
  void all_reduce(int, std::span<float>) override { FAIL("not used"); }
  void reduce_scatter(int, std::span<const float>, std::span<float>) override { FAIL("not used"); }
  void all_gather(int, std::span<const float>, std::span<float>) override { FAIL("not used"); }
  void send(int peer, std::span<const float> data, int) override {
    std::lock_guard lock(box_.m);
    box_.queues[{rank_, peer}].emplace_back(data.begin(), data.end());
    box_.cv.notify_all();
  }
  void recv(int peer, std::span<float> data, int) override {
    std::unique_lock lock(box_.m);
    auto& q = box_.queues[{peer, rank_}];
    box_.cv.wait(lock, [&] { return !q.empty(); });
    std::copy(q.front().begin(), q.front().end(), data.begin());
    q.pop_front();
  }
  void barrier() override {
    {
      std::unique_lock lock(box_.m);
      const int gen = box_.generation;
      if (++box_.arrived == 2) {
        box_.arrived = 0;
        ++box_.generation;
        box_.cv.notify_all();
      } else {
        box_.cv.wait(lock, [&] { return box_.generation != gen; });
      }
    }
    std::this_thread::sleep_for(delay_);
  }
  void set_groups(const std::vector<std::vector<int>>&) override {}
  [[noreturn]] void abort(const std::string& message) override {
    throw std::runtime_error(message);
  }

 private:
  Mailboxes& box_;
  int rank_;
  std::chrono::milliseconds delay_;
};

}  // namespace

TEST_CASE("align_clocks measures a late rank's offset and puts both on rank 0's time line") {
  Mailboxes box;
  AlignedClock clocks[2];
  std::thread late([&] {
    ThreadComm comm(box, 1, std::chrono::milliseconds(30));
    clocks[1] = align_clocks(comm);
  });
  ThreadComm comm(box, 0, std::chrono::milliseconds(0));
  clocks[0] = align_clocks(comm);
  late.join();
  CHECK(clocks[0].offset_s() == 0);
  // Rank 1's origin is 30 ms (and the scheduler's wake-up) after rank 0's; the estimate errs by
  // at most half the best ping's round trip, microseconds here, generously bounded.
  CHECK(clocks[1].offset_s() > 0.025);
  CHECK(clocks[1].offset_s() < 0.080);
  const auto now = AlignedClock::Clock::now();
  CHECK(std::abs(clocks[1].seconds(now) - clocks[0].seconds(now)) < 0.005);
}
