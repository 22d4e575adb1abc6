// One rank's non-blocking starts and their waits while the compiler builds its stream: numbers
// each start (0, 1, ... in stream order, unique within the step, as plan/schedule.hpp defines)
// and appends the matching Wait, built from the start, where the compiler asks for it.
// Not here: where starts and waits go (compile.cpp, pipeline_transfers.hpp) or how they are
// played (sim/, exec/).
#pragma once
#include <map>
#include <vector>

#include "plan/schedule.hpp"

namespace fabtrain {

class StreamRequests {
 public:
  explicit StreamRequests(std::vector<Instruction>& out) : out_(&out) {}

  // Appends the instruction as a start with the next request; returns the request.
  int start(Collective c);
  int start(Send s);
  int start(Recv r);
  // Appends the Wait of a request started here and not yet waited; -1: nothing.
  void wait(int request);
  bool pending(int request) const { return waits_.count(request) > 0; }

 private:
  std::vector<Instruction>* out_;
  int next_ = 0;
  std::map<int, Wait> waits_;  // started, not yet waited
};

}  // namespace fabtrain
