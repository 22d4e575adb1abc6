// The Communicator's default non-blocking calls (see communicator.hpp): blocking at once.
#include "exec/comm/communicator.hpp"

#include "common/error.hpp"

namespace fabtrain {

int Communicator::finished_request() {
  const int request = next_finished_++;
  finished_.insert(request);
  return request;
}

void Communicator::unknown_request(int request) const {
  fail("{} communicator, rank {}: wait on request {}, which was not started or was already waited",
       name(), rank(), request);
}

int Communicator::start_all_reduce(int group, std::span<float> data) {
  all_reduce(group, data);
  return finished_request();
}

int Communicator::start_reduce_scatter(int group, std::span<const float> in, std::span<float> out) {
  reduce_scatter(group, in, out);
  return finished_request();
}

int Communicator::start_all_gather(int group, std::span<const float> in, std::span<float> out) {
  all_gather(group, in, out);
  return finished_request();
}

int Communicator::start_send(int peer, std::span<const float> data, int tag) {
  send(peer, data, tag);
  return finished_request();
}

int Communicator::start_recv(int peer, std::span<float> data, int tag) {
  recv(peer, data, tag);
  return finished_request();
}

void Communicator::wait(int request) {
  if (finished_.erase(request) == 0) unknown_request(request);
}

}  // namespace fabtrain
