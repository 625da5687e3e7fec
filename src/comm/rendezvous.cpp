#include "comm/rendezvous.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace dcu {
namespace {

using Clock = std::chrono::steady_clock;

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

std::string where(const RendezvousOptions& o) { return o.master_addr + ":" + std::to_string(o.master_port); }

void send_all(int fd, const void* data, size_t n, const RendezvousOptions& o) {
  const char* p = static_cast<const char*>(data);
  while (n) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) fail("rendezvous with {}: send failed ({})", where(o), std::strerror(errno));
    p += k;
    n -= size_t(k);
  }
}

void recv_all(int fd, void* data, size_t n, const RendezvousOptions& o) {
  char* p = static_cast<char*>(data);
  while (n) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, o.timeout_s * 1000) <= 0) fail("rendezvous with {}: no answer within {} s", where(o), o.timeout_s);
    ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0) fail("rendezvous with {}: connection closed early", where(o));
    p += k;
    n -= size_t(k);
  }
}

addrinfo* resolve(const RendezvousOptions& o, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(o.master_port);
  int rc = ::getaddrinfo(passive ? nullptr : o.master_addr.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) fail("--master-addr {}: cannot resolve ({})", o.master_addr, ::gai_strerror(rc));
  return res;
}

std::vector<char> serve(const RendezvousOptions& o, const std::vector<char>& payload) {
  addrinfo* res = resolve(o, true);
  Socket listener;
  for (addrinfo* a = res; a; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
    if (s.fd() < 0) continue;
    int one = 1;
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(s.fd(), 64) == 0) {
      listener = std::move(s);
      break;
    }
  }
  ::freeaddrinfo(res);
  if (listener.fd() < 0) fail("rendezvous: cannot listen on port {} ({})", o.master_port, std::strerror(errno));
  std::vector<bool> seen(size_t(o.nnodes), false);
  const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
  for (int joined = 1; joined < o.nnodes; ++joined) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{listener.fd(), POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, int(left)) <= 0)
      fail("rendezvous on port {}: {} of {} nodes joined within {} s", o.master_port, joined, o.nnodes, o.timeout_s);
    Socket peer(::accept(listener.fd(), nullptr, nullptr));
    if (peer.fd() < 0) fail("rendezvous on port {}: accept failed ({})", o.master_port, std::strerror(errno));
    int32_t rank = -1;
    recv_all(peer.fd(), &rank, sizeof rank, o);
    if (rank <= 0 || rank >= o.nnodes || seen[size_t(rank)])
      fail("rendezvous on port {}: a node announced node rank {} (expected 1..{}, each once)", o.master_port, rank,
           o.nnodes - 1);
    seen[size_t(rank)] = true;
    const uint32_t n = uint32_t(payload.size());
    send_all(peer.fd(), &n, sizeof n, o);
    send_all(peer.fd(), payload.data(), payload.size(), o);
  }
  return payload;
}

std::vector<char> join(const RendezvousOptions& o) {
  const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
  for (;;) {
    addrinfo* res = resolve(o, false);
    Socket s;
    for (addrinfo* a = res; a && s.fd() < 0; a = a->ai_next) {
      Socket c(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (c.fd() >= 0 && ::connect(c.fd(), a->ai_addr, a->ai_addrlen) == 0) s = std::move(c);
    }
    ::freeaddrinfo(res);
    if (s.fd() >= 0) {
      const int32_t rank = o.node_rank;
      send_all(s.fd(), &rank, sizeof rank, o);
      uint32_t n = 0;
      recv_all(s.fd(), &n, sizeof n, o);
      std::vector<char> payload(n);
      recv_all(s.fd(), payload.data(), n, o);
      return payload;
    }
    if (Clock::now() > deadline) fail("rendezvous: node 0 at {} did not answer within {} s", where(o), o.timeout_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // node 0 may not listen yet
  }
}

}  // namespace

std::vector<char> rendezvous_share(const RendezvousOptions& o, const std::vector<char>& payload) {
  if (o.nnodes < 1) fail("--nnodes must be at least 1");
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) fail("--node-rank {} is outside 0..{}", o.node_rank, o.nnodes - 1);
  if (o.master_port <= 0 || o.master_port > 65535) fail("--master-port {} is not a TCP port", o.master_port);
  if (o.nnodes == 1) return payload;
  return o.node_rank == 0 ? serve(o, payload) : join(o);
}

}  // namespace dcu
