// How the trainer reaches a device backend built in another library (exec/cuda links exec, so
// exec cannot name it): the program fills a DeviceBackend and passes it to train(). The CPU
// backend needs none. Not here: the backends themselves.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "exec/communicator.hpp"
#include "exec/mpi_communicator.hpp"
#include "exec/stage.hpp"
#include "models/model_spec.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

struct DeviceBackend {
  std::string name;         // the --device value it serves ("cuda")
  std::string description;  // printed and recorded: device, precision, communicator
  // The rank's stage on its device (same arguments as Gpt2Stage).
  std::function<std::unique_ptr<Stage>(const ModelSpec&, BlockRange, int tp, int tp_rank, int b,
                                       int t, int max_microbatches)>
      make_stage;
  // The communicator the schedule is played on; returning nullptr means the MPI one. Called
  // once on every rank at the same point (it may be collective).
  std::function<std::unique_ptr<Communicator>(MpiCommunicator&)> make_communicator;
};

}  // namespace fabtrain
