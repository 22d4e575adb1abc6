// Point-to-point peers of a stream (see transfer_peers.hpp).
#include "exec/run/transfer_peers.hpp"

#include <algorithm>

namespace fabtrain {

std::vector<int> transfer_peers(const std::vector<Instruction>& stream) {
  std::vector<int> peers;
  for (const Instruction& instruction : stream) {
    int peer = -1;
    if (const auto* send = std::get_if<Send>(&instruction)) peer = send->peer;
    if (const auto* recv = std::get_if<Recv>(&instruction)) peer = recv->peer;
    if (peer >= 0 && std::find(peers.begin(), peers.end(), peer) == peers.end())
      peers.push_back(peer);
  }
  return peers;
}

}  // namespace fabtrain
