// Where one rank's pipeline transfers go in its stream, blocking (overlap=off) or overlapped:
// a send starts and is waited before the next send of the same tensor reuses the buffer (the
// last at the end of the step); a receive of microbatch k+1 is posted right after that of k
// completes (the first at the start of the step) and waited right before the compute that
// uses it. One receive and one send per tensor are in flight at a time, so the buffers in
// flight stay within two boundary tensors each way. Scattered over tp (p2p=scatter), each transfer
// carries 1/tp of the boundary tensor and every completed receive is followed by the all-gather
// over the rank's tp group that rebuilds the whole tensor.
// Not here: when a stage sends or receives (compile.cpp) or request numbers (requests.hpp).
#pragma once
#include <map>
#include <vector>

#include "plan/requests.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

// The tp group a boundary tensor is scattered over (p2p=scatter); group -1: sent whole.
struct TpScatter {
  int group = -1;  // index into Schedule::groups
  int ranks = 1;
};

class PipelineTransfers {
 public:
  // previous/next: the peer ranks of the stages before and after (-1: none); bytes: the whole
  // boundary tensor; microbatches: of the step.
  PipelineTransfers(std::vector<Instruction>& out, StreamRequests& requests, bool overlap,
                    int microbatches, double bytes, int previous, int next, TpScatter scatter = {});

  void start_step();                  // overlap: posts the first receive of each tensor
  void receive(Tensor what, int mb);  // right before the compute that needs it
  void send(Tensor what, int mb);     // right after the compute that produced it
  void end_step();                    // overlap: waits the last sends

 private:
  int from(Tensor what) const { return what == Tensor::activation ? previous_ : next_; }
  int to(Tensor what) const { return what == Tensor::activation ? next_ : previous_; }
  void post(Tensor what, int mb);
  double transfer_bytes() const { return bytes_ / scatter_.ranks; }
  void gather(int mb);  // p2p=scatter: the received parts made whole

  std::vector<Instruction>* out_;
  StreamRequests* requests_;
  bool overlap_;
  int microbatches_;
  double bytes_;
  int previous_, next_;
  TpScatter scatter_;
  std::map<std::pair<int, int>, int> posted_;  // (tensor, mb) -> request of its receive
  int last_send_[2] = {-1, -1};                // per tensor: request of the send in flight
};

}  // namespace fabtrain
