// A step one rank takes alone at a job's start (exec/comm/agreed_step.hpp): its Error reaches
// every rank as a JobWideError, reported by the rank that met it and quiet on the others; a step
// that succeeds lets every rank go on.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "exec/comm/agreed_step.hpp"
#include "exec/comm/loopback_communicator.hpp"

using namespace fabtrain;

namespace {

struct Outcome {
  std::optional<std::string> message;  // set when a JobWideError ended the rank
  bool reported_elsewhere = false;
};

// Three ranks; rank 0's step fails with `error` when it is not empty.
std::vector<Outcome> run_on_three_ranks(const std::string& error) {
  LoopbackHub hub(3, 30);
  std::vector<Outcome> outcomes(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      comm.set_groups({{0, 1, 2}});
      try {
        run_agreed_step(comm, 0, [&] {
          if (r == 0 && !error.empty()) fail("{}", error);
        });
      } catch (const JobWideError& e) {
        outcomes[r] = {e.what(), e.reported_elsewhere};
      }
    });
  for (std::thread& t : ranks) t.join();
  return outcomes;
}

}  // namespace

TEST_CASE("a failed step of rank 0 ends every rank, reported once") {
  const std::vector<Outcome> outcomes = run_on_three_ranks("--checkpoint-dir ck: in use");
  REQUIRE(outcomes[0].message.has_value());
  CHECK(*outcomes[0].message == "--checkpoint-dir ck: in use");
  CHECK_FALSE(outcomes[0].reported_elsewhere);
  for (int r : {1, 2}) {
    REQUIRE(outcomes[r].message.has_value());
    CHECK(outcomes[r].reported_elsewhere);
  }
}

TEST_CASE("a step that succeeds lets every rank go on") {
  for (const Outcome& o : run_on_three_ranks("")) CHECK_FALSE(o.message.has_value());
}
