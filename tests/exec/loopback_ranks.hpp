// Every rank of a schedule on its own thread over one LoopbackHub, for tests of the interpreter
// without MPI: each rank's communicator gets the schedule's groups and takes device memory or
// not, the rank runs one OpenMP thread, and what a rank throws aborts the communicator (so no
// other rank waits for it forever) and comes back as that rank's error text.
#pragma once
#include <omp.h>

#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "exec/comm/loopback_communicator.hpp"
#include "plan/schedule.hpp"

namespace fabtrain::test {

// body(rank, comm) for every rank; returns each rank's error ("" when it finished).
template <typename Body>
std::vector<std::string> run_loopback_ranks(const Schedule& schedule, bool device_memory,
                                            Body body) {
  const int world = int(schedule.ranks.size());
  LoopbackHub hub(world);
  std::vector<std::string> errors(schedule.ranks.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      LoopbackCommunicator comm(hub, r);
      try {
        omp_set_num_threads(1);
        comm.set_groups(schedule.groups);
        comm.set_takes_device_memory(device_memory);
        body(r, comm);
      } catch (const std::exception& e) {
        errors[std::size_t(r)] = e.what();
        try {
          comm.abort(e.what());
        } catch (const std::exception&) {
        }
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

}  // namespace fabtrain::test
