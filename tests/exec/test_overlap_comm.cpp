// Non-blocking communication on its own (exec/comm/communicator.hpp): the loopback communicator's
// started collectives give the same sums as the blocking ones and complete without anyone's wait
// (the last member to start finishes them), deferred receives, waits on unknown or finished
// requests refused by name; the default (blocking) start_* of a communicator that cannot overlap,
// and the warning train and replay print for overlap=on on it (exec/run/overlap_check.hpp).
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "exec/comm/loopback_communicator.hpp"
#include "exec/run/overlap_check.hpp"
#include "plan/plan.hpp"

using namespace fabtrain;

namespace {

// Runs body(comm) on `ranks` threads of one hub; returns each rank's error ("" if none).
template <typename Body>
std::vector<std::string> on_threads(int ranks, Body body, double timeout_s = 30) {
  LoopbackHub hub(ranks, timeout_s);
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      try {
        body(comm, r);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        try {
          comm.abort(e.what());
        } catch (const std::exception&) {
        }
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

// A communicator that cannot overlap: every call is local (one rank), start_* are the defaults.
class Solo : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string host() const override { return "solo"; }
  std::string name() const override { return "solo"; }
  void all_reduce(int, std::span<float> d) override {
    for (float& x : d) x *= 2;  // marks that it ran
  }
  void reduce_scatter(int, std::span<const float>, std::span<float>) override {}
  void all_gather(int, std::span<const float>, std::span<float>) override {}
  void send(int, std::span<const float>, int) override {}
  void recv(int, std::span<float>, int) override {}
  void barrier() override {}
  void set_groups(const std::vector<std::vector<int>>&) override {}
  [[noreturn]] void abort(const std::string& m) override { fail("{}", m); }
};

}  // namespace

TEST_CASE("loopback overlap: started collectives equal the blocking ones, bit for bit") {
  std::vector<std::vector<float>> blocking(3), started(3), scattered(3), gathered(3);
  const auto errors = on_threads(3, [&](LoopbackCommunicator& comm, int r) {
    comm.set_groups({{0, 1, 2}});
    // Values whose float sum depends on the order of additions.
    const std::vector<float> mine = {0.1f * (r + 1), 1e8f * (r == 1 ? -1 : 1), 1.0f / (r + 3)};
    blocking[r] = mine;
    comm.all_reduce(0, blocking[r]);
    started[r] = mine;
    const int a = comm.start_all_reduce(0, started[r]);
    std::vector<float> in = {1.0f * r, 2.0f * r, 3.0f * r}, out(1);
    const int b = comm.start_reduce_scatter(0, in, out);
    std::vector<float> one = {float(r)}, all(3);
    const int c = comm.start_all_gather(0, one, all);
    comm.wait(c);  // out of order: each completes on its own
    comm.wait(a);
    comm.wait(b);
    scattered[r] = out;
    gathered[r] = all;
  });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    REQUIRE(errors[r].empty());
    CHECK(started[r] == blocking[r]);
    CHECK(started[r] == blocking[0]);
    CHECK(scattered[r] == std::vector<float>{3.0f * (r + 1)});
    CHECK(gathered[r] == std::vector<float>{0.0f, 1.0f, 2.0f});
  }
}

TEST_CASE("loopback overlap: a started collective completes before its wait, receives defer") {
  // Rank 0 starts an all-reduce, then blocks on a receive from rank 1, which waits on the
  // all-reduce first: only a start that needs nobody's wait lets this finish.
  std::vector<float> reduced0(2), got(1);
  const auto errors = on_threads(2, [&](LoopbackCommunicator& comm, int r) {
    comm.set_groups({{0, 1}});
    std::vector<float> x = {float(r + 1), 10.0f};
    const int a = comm.start_all_reduce(0, x);
    if (r == 0) {
      std::vector<float> in(1);
      const int q = comm.start_recv(1, in, 5);  // posted before the message exists
      comm.wait(q);
      got = in;
      comm.wait(a);
      reduced0 = x;
    } else {
      comm.wait(a);
      const int s = comm.start_send(0, std::vector<float>{x[0]}, 5);
      comm.wait(s);
    }
  });
  INFO(errors[0] << " | " << errors[1]);
  REQUIRE(errors[0].empty());
  REQUIRE(errors[1].empty());
  CHECK(reduced0 == std::vector<float>{3.0f, 20.0f});
  CHECK(got == std::vector<float>{3.0f});
}

TEST_CASE("overlap: waits on unknown or finished requests and mismatched starts are refused") {
  LoopbackHub hub(1);
  LoopbackCommunicator comm(hub, 0);
  comm.set_groups({{0}});
  CHECK_THROWS_WITH_AS(comm.wait(7), doctest::Contains("request 7"), Error);
  std::vector<float> x(2, 1.0f);
  const int a = comm.start_all_reduce(0, x);
  comm.wait(a);
  CHECK_THROWS_WITH_AS(comm.wait(a), doctest::Contains("loopback communicator"), Error);
  std::vector<float> out(3);
  CHECK_THROWS_AS(comm.start_reduce_scatter(0, x, out), Error);  // 2 in, 3 out over 1 rank

  const auto errors = on_threads(
      2,
      [&](LoopbackCommunicator& c, int r) {
        c.set_groups({{0, 1}});
        std::vector<float> v(2, 1.0f), all(4);
        const int q = r == 0 ? c.start_all_reduce(0, v) : c.start_all_gather(0, v, all);
        c.wait(q);
      },
      10);
  CHECK((errors[0] + errors[1]).find("another kind") != std::string::npos);
}

TEST_CASE("overlap: a communicator that cannot overlap completes at the start and says so") {
  Solo solo;
  std::vector<float> x = {1.0f, 2.0f};
  const int a = solo.start_all_reduce(0, x);
  CHECK(x == std::vector<float>{2.0f, 4.0f});  // done before the wait
  solo.wait(a);
  CHECK_THROWS_WITH_AS(solo.wait(a), doctest::Contains("solo communicator"), Error);
  CHECK_FALSE(solo.can_overlap());

  Plan plan = parse_plan("dp=2");
  const std::string warning = overlap_warning(plan, solo);
  CHECK(warning.find("overlap=on") != std::string::npos);
  CHECK(warning.find("solo communicator cannot overlap") != std::string::npos);
  plan.overlap = false;
  CHECK(overlap_warning(plan, solo).empty());
  LoopbackHub hub(1);
  LoopbackCommunicator loop(hub, 0);
  CHECK(overlap_warning(parse_plan("dp=2"), loop).empty());
}
