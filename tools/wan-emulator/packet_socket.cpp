// AF_PACKET socket on one interface (see packet_socket.hpp).
#include "packet_socket.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "common/error.hpp"

namespace fabtrain::wan {

int64_t realtime_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

static constexpr int kMaxBatch = 256;

PacketSocket::PacketSocket(const std::string& interface_name, int receive_buffer_bytes)
    : interface_name_(interface_name) {
  ifindex_ = static_cast<int>(if_nametoindex(interface_name.c_str()));
  if (ifindex_ == 0)
    fail(
        "interface '{}' not found in this network namespace (run the emulator inside the "
        "namespace that holds it, e.g. `ip netns exec wan ...`)",
        interface_name);
  fd_ = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd_ < 0)
    fail("socket(AF_PACKET) for '{}': {} (needs CAP_NET_RAW, i.e. root)", interface_name,
         std::strerror(errno));
  auto set = [&](int level, int option, int value, const char* what) {
    if (setsockopt(fd_, level, option, &value, sizeof value) != 0) {
      const int saved = errno;
      close(fd_);
      fail("setsockopt({}) on '{}': {}", what, interface_name, std::strerror(saved));
    }
  };
  set(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING");
  set(SOL_SOCKET, SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS");
  // Force (as root) a receive buffer large enough to ride out a scheduling hiccup.
  if (setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &receive_buffer_bytes, sizeof(int)) != 0)
    set(SOL_SOCKET, SO_RCVBUF, receive_buffer_bytes, "SO_RCVBUF");

  sockaddr_ll address{};
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ETH_P_ALL);
  address.sll_ifindex = ifindex_;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int saved = errno;
    close(fd_);
    fail("bind(AF_PACKET) to '{}': {}", interface_name, std::strerror(saved));
  }
  ifreq request{};
  std::strncpy(request.ifr_name, interface_name.c_str(), IFNAMSIZ - 1);
  mtu_ = ioctl(fd_, SIOCGIFMTU, &request) == 0 ? request.ifr_mtu : 1500;
  take_kernel_drops();  // frames seen before we were ready do not count
}

PacketSocket::~PacketSocket() {
  if (fd_ >= 0) close(fd_);
}

int PacketSocket::receive(FrameSlot* slots, int count) {
  count = std::min(count, kMaxBatch);
  mmsghdr messages[kMaxBatch];
  iovec vectors[kMaxBatch];
  alignas(cmsghdr) char control[kMaxBatch][CMSG_SPACE(sizeof(timespec))];
  for (int i = 0; i < count; ++i) {
    vectors[i] = {slots[i].data, static_cast<size_t>(slots[i].capacity)};
    messages[i] = {};
    messages[i].msg_hdr.msg_iov = &vectors[i];
    messages[i].msg_hdr.msg_iovlen = 1;
    messages[i].msg_hdr.msg_control = control[i];
    messages[i].msg_hdr.msg_controllen = sizeof control[i];
  }
  // MSG_TRUNC: msg_len is the frame's real length, so oversize frames are noticed.
  const int received = recvmmsg(fd_, messages, count, MSG_DONTWAIT | MSG_TRUNC, nullptr);
  if (received < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    fail("recvmmsg on '{}': {}", interface_name_, std::strerror(errno));
  }
  const int64_t fallback_ns = realtime_now_ns();
  for (int i = 0; i < received; ++i) {
    slots[i].length = messages[i].msg_len;
    slots[i].arrival_ns = fallback_ns;
    for (cmsghdr* c = CMSG_FIRSTHDR(&messages[i].msg_hdr); c;
         c = CMSG_NXTHDR(&messages[i].msg_hdr, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        slots[i].arrival_ns = ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
      }
    }
  }
  return received;
}

int PacketSocket::send(const FrameSlot* slots, int count) {
  count = std::min(count, kMaxBatch);
  mmsghdr messages[kMaxBatch];
  iovec vectors[kMaxBatch];
  for (int i = 0; i < count; ++i) {
    vectors[i] = {slots[i].data, static_cast<size_t>(slots[i].length)};
    messages[i] = {};
    messages[i].msg_hdr.msg_iov = &vectors[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  int position = 0, sent = 0;
  while (position < count) {
    const int n = sendmmsg(fd_, messages + position, count - position, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      ++position;  // the kernel refused this frame (e.g. ENOBUFS): skip it, send the rest
      continue;
    }
    position += n;
    sent += n;
  }
  return sent;
}

uint64_t PacketSocket::take_kernel_drops() {
  tpacket_stats stats{};
  socklen_t length = sizeof stats;
  if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &stats, &length) != 0) return 0;
  return stats.tp_drops;  // reading resets the kernel's counters
}

}  // namespace fabtrain::wan
