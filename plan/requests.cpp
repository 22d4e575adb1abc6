// Numbering starts and building their waits (see requests.hpp).
#include "plan/requests.hpp"

#include "common/error.hpp"

namespace fabtrain {

int StreamRequests::start(Collective c) {
  c.request = next_++;
  waits_[c.request] = Wait{c.request, Awaits::collective, c.bytes, c.op, c.purpose};
  out_->push_back(c);
  return c.request;
}

int StreamRequests::start(Send s) {
  s.request = next_++;
  waits_[s.request] = Wait{s.request, Awaits::send, s.bytes};
  out_->push_back(s);
  return s.request;
}

int StreamRequests::start(Recv r) {
  r.request = next_++;
  waits_[r.request] = Wait{r.request, Awaits::recv, r.bytes};
  out_->push_back(r);
  return r.request;
}

void StreamRequests::wait(int request) {
  if (request < 0) return;
  const auto it = waits_.find(request);
  if (it == waits_.end()) fail("compiler: wait of request {} that is not in flight", request);
  out_->push_back(it->second);
  waits_.erase(it);
}

}  // namespace fabtrain
