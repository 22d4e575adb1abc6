// Placing pipeline sends and receives (see pipeline_transfers.hpp).
#include "plan/pipeline_transfers.hpp"

namespace fabtrain {

PipelineTransfers::PipelineTransfers(std::vector<Instruction>& out, StreamRequests& requests,
                                     bool overlap, int microbatches, double bytes, int previous,
                                     int next, TpScatter scatter)
    : out_(&out),
      requests_(&requests),
      overlap_(overlap),
      microbatches_(microbatches),
      bytes_(bytes),
      previous_(previous),
      next_(next),
      scatter_(scatter) {}

void PipelineTransfers::start_step() {
  if (!overlap_) return;
  if (previous_ >= 0) post(Tensor::activation, 0);
  if (next_ >= 0) post(Tensor::gradient, 0);
}

void PipelineTransfers::post(Tensor what, int mb) {
  if (mb >= microbatches_ || posted_.count({int(what), mb})) return;
  posted_[{int(what), mb}] = requests_->start(Recv{what, mb, from(what), transfer_bytes()});
}

void PipelineTransfers::gather(int mb) {
  if (scatter_.group < 0) return;
  Collective c;
  c.op = CollectiveOp::all_gather;
  c.purpose = Purpose::pipeline_gather;
  c.group = scatter_.group;
  c.bytes = bytes_;
  c.mb = mb;
  out_->push_back(c);
}

void PipelineTransfers::receive(Tensor what, int mb) {
  if (!overlap_) {
    out_->push_back(Recv{what, mb, from(what), transfer_bytes()});
    gather(mb);
    return;
  }
  post(what, mb);
  requests_->wait(posted_.at({int(what), mb}));
  posted_.erase({int(what), mb});
  gather(mb);
  post(what, mb + 1);
}

void PipelineTransfers::send(Tensor what, int mb) {
  const Send out{what, mb, to(what), transfer_bytes()};
  if (!overlap_) {
    out_->push_back(out);
    return;
  }
  int& last = last_send_[int(what)];
  requests_->wait(last);  // its buffer is about to be reused
  last = requests_->start(out);
}

void PipelineTransfers::end_step() {
  for (int& request : last_send_) {
    requests_->wait(request);
    request = -1;
  }
}

}  // namespace fabtrain
