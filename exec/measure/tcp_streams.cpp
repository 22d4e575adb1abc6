// Sockets for tcp_bandwidth (see tcp_streams.hpp): IPv4, blocking accept/connect with poll()
// timeouts, the transfer driven by poll() over all streams at once.
#include "exec/measure/tcp_streams.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace fabtrain::bench {
namespace {

constexpr int kTagAddress = 9200, kTagDone = 9201;
constexpr int kMaxAddresses = 8;
constexpr std::size_t kChunk = 1 << 20;

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail_errno(const std::string& what) {
  fail("tcp probe: {}: {}", what, std::strerror(errno));
}

double remaining_ms(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now())
      .count();
}

// Every IPv4 address of this host, the loopback last (it serves two ranks on one machine).
std::vector<in_addr> local_addresses() {
  std::vector<in_addr> out, loopback;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) fail_errno("getifaddrs");
  for (ifaddrs* i = list; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
      const in_addr a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
      (ntohl(a.s_addr) >> 24 == 127 ? loopback : out).push_back(a);
    }
  ::freeifaddrs(list);
  out.insert(out.end(), loopback.begin(), loopback.end());
  if (out.size() > kMaxAddresses) out.resize(kMaxAddresses);
  return out;
}

// A non-blocking connect to addr:port that gives up after timeout_ms; -1 on failure.
int connect_within(in_addr addr, int port, double timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) fail_errno("socket");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(uint16_t(port));
  sa.sin_addr = addr;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int err = 0;
  socklen_t len = sizeof err;
  if (::poll(&p, 1, int(timeout_ms)) != 1 ||
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Moves `per_stream` bytes over each socket at once: sending or receiving, until done or the
// deadline passes.
void transfer(std::vector<Fd>& socks, double per_stream, bool sending,
              std::chrono::steady_clock::time_point deadline) {
  std::vector<char> buffer(kChunk, 'f');
  std::vector<double> left(socks.size(), per_stream);
  std::vector<pollfd> fds;
  for (auto& s : socks) fds.push_back({s.fd, short(sending ? POLLOUT : POLLIN), 0});
  std::size_t open = socks.size();
  while (open > 0) {
    const double ms = remaining_ms(deadline);
    if (ms <= 0) fail("tcp probe: the transfer did not finish within its time limit");
    if (::poll(fds.data(), fds.size(), int(ms) + 1) < 0 && errno != EINTR) fail_errno("poll");
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (left[i] <= 0 || !fds[i].revents) continue;
      const std::size_t want = std::size_t(std::min<double>(left[i], kChunk));
      const ssize_t n = sending ? ::send(fds[i].fd, buffer.data(), want, MSG_NOSIGNAL)
                                : ::recv(fds[i].fd, buffer.data(), want, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0)
        fail("tcp probe: stream {} {}", i, n == 0 ? "closed early" : std::strerror(errno));
      left[i] -= double(n);
      if (left[i] <= 0) fds[i].events = 0, --open;
    }
  }
}

}  // namespace

double tcp_bandwidth(Communicator& comm, int sender, int receiver, const TcpOptions& o) {
  if (o.streams < 1) fail("tcp probe: streams={} must be at least 1", o.streams);
  if (!(o.bytes > 0)) fail("tcp probe: bytes={} must be positive", o.bytes);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(o.timeout_s));
  const double per_stream = std::ceil(o.bytes / o.streams);
  std::vector<float> done(1, 0.0f);
  // [port, count, a0 b0 c0 d0, a1 ...]: small integers, exact in floats.
  std::vector<float> address(2 + 4 * kMaxAddresses, 0.0f);
  std::vector<Fd> socks;
  double seconds = 0;
  if (comm.rank() == receiver) {
    Fd listener(::socket(AF_INET, SOCK_STREAM, 0));
    if (listener.fd < 0) fail_errno("socket");
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof sa;
    if (::bind(listener.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) fail_errno("bind");
    if (::listen(listener.fd, o.streams) != 0) fail_errno("listen");
    if (::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0)
      fail_errno("getsockname");
    const auto addrs = local_addresses();
    address[0] = float(ntohs(sa.sin_port));
    address[1] = float(addrs.size());
    for (std::size_t i = 0; i < addrs.size(); ++i) {
      const uint32_t a = ntohl(addrs[i].s_addr);
      for (int k = 0; k < 4; ++k) address[2 + 4 * i + k] = float((a >> (24 - 8 * k)) & 0xff);
    }
    comm.send(sender, address, kTagAddress);
    while (int(socks.size()) < o.streams) {
      pollfd p{listener.fd, POLLIN, 0};
      if (::poll(&p, 1, int(std::max(0.0, remaining_ms(deadline)))) != 1)
        fail("tcp probe: rank {} accepted {} of {} streams from rank {} in time (a firewall?)",
             receiver, socks.size(), o.streams, sender);
      const int fd = ::accept(listener.fd, nullptr, nullptr);
      if (fd < 0) fail_errno("accept");
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      socks.emplace_back(fd);
    }
    transfer(socks, per_stream, false, deadline);
    comm.send(sender, done, kTagDone);
    comm.recv(sender, done, kTagDone);  // the sender's measured seconds
    seconds = done[0];
  } else if (comm.rank() == sender) {
    comm.recv(receiver, address, kTagAddress);
    const int port = int(address[0]);
    in_addr reached{};
    for (int i = 0; i < int(address[1]) && socks.empty(); ++i) {
      uint32_t a = 0;
      for (int k = 0; k < 4; ++k) a = (a << 8) | uint32_t(address[2 + 4 * i + k]);
      in_addr addr{htonl(a)};
      const int fd = connect_within(addr, port, std::min(5000.0, remaining_ms(deadline)));
      if (fd >= 0) socks.emplace_back(fd), reached = addr;
    }
    if (socks.empty())
      fail("tcp probe: rank {} reached none of rank {}'s {} addresses on port {}", sender, receiver,
           int(address[1]), port);
    for (int s = 1; s < o.streams; ++s) {
      const int fd = connect_within(reached, port, std::max(1.0, remaining_ms(deadline)));
      if (fd < 0)
        fail("tcp probe: stream {} from rank {} to {} did not connect", s, sender,
             inet_ntoa(reached));
      socks.emplace_back(fd);
    }
    const auto start = std::chrono::steady_clock::now();
    transfer(socks, per_stream, true, deadline);
    comm.recv(receiver, done, kTagDone);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    done[0] = float(seconds);
    comm.send(receiver, done, kTagDone);
  }
  return seconds > 0 ? per_stream * o.streams / seconds : 0;
}

}  // namespace fabtrain::bench
