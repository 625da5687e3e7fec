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
#include <utility>

#include "core/error.h"

namespace dcu {
namespace {

using Clock = std::chrono::steady_clock;

// What a joining node says first.
struct Hello {
  int32_t node_rank;
  int32_t nnodes;
};

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
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string where(const RendezvousOptions& o) { return o.master_addr + ":" + std::to_string(o.master_port); }

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

// Reads the joining node's hello, waiting at most until `deadline`.
Hello read_hello(int fd, const RendezvousOptions& o, Clock::time_point deadline) {
  Hello hello{};
  char* p = reinterpret_cast<char*>(&hello);
  size_t n = sizeof hello;
  while (n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, int(left)) <= 0)
      fail("rendezvous on port {}: a node connected but did not say its node rank within {} s", o.master_port,
           o.timeout_s);
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0) fail("rendezvous on port {}: a node closed its connection before saying its node rank", o.master_port);
    p += k;
    n -= size_t(k);
  }
  return hello;
}

std::vector<NodeLink> accept_nodes(const RendezvousOptions& o) {
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
  std::vector<Socket> peers(size_t(o.nnodes - 1));
  const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
  for (int joined = 1; joined < o.nnodes; ++joined) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{listener.fd(), POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, int(left)) <= 0)
      fail("rendezvous on port {}: {} of {} nodes joined within {} s", o.master_port, joined, o.nnodes, o.timeout_s);
    Socket peer(::accept(listener.fd(), nullptr, nullptr));
    if (peer.fd() < 0) fail("rendezvous on port {}: accept failed ({})", o.master_port, std::strerror(errno));
    const Hello hello = read_hello(peer.fd(), o, deadline);
    if (hello.nnodes != o.nnodes)
      fail("rendezvous on port {}: node {} was started with --nnodes {}, node 0 with --nnodes {}", o.master_port,
           hello.node_rank, hello.nnodes, o.nnodes);
    if (hello.node_rank <= 0 || hello.node_rank >= o.nnodes || peers[size_t(hello.node_rank - 1)].fd() >= 0)
      fail("rendezvous on port {}: a node announced node rank {} (expected 1..{}, each once)", o.master_port,
           hello.node_rank, o.nnodes - 1);
    peers[size_t(hello.node_rank - 1)] = std::move(peer);
  }
  std::vector<NodeLink> links;
  for (size_t i = 0; i < peers.size(); ++i) links.emplace_back(peers[i].release(), "node " + std::to_string(i + 1));
  return links;
}

NodeLink join_node0(const RendezvousOptions& o) {
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
      const Hello hello{o.node_rank, o.nnodes};
      if (::send(s.fd(), &hello, sizeof hello, MSG_NOSIGNAL) != ssize_t(sizeof hello))
        fail("rendezvous with {}: send failed ({})", where(o), std::strerror(errno));
      return NodeLink(s.release(), "node 0 at " + where(o));
    }
    if (Clock::now() > deadline) fail("rendezvous: node 0 at {} did not answer within {} s", where(o), o.timeout_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // node 0 may not listen yet
  }
}

}  // namespace

std::vector<NodeLink> connect_nodes(const RendezvousOptions& o) {
  if (o.nnodes < 1) fail("--nnodes must be at least 1");
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) fail("--node-rank {} is outside 0..{}", o.node_rank, o.nnodes - 1);
  if (o.master_port <= 0 || o.master_port > 65535) fail("--master-port {} is not a TCP port", o.master_port);
  std::vector<NodeLink> links;
  if (o.nnodes == 1) return links;
  if (o.node_rank == 0) return accept_nodes(o);
  links.push_back(join_node0(o));
  return links;
}

std::vector<char> share_from_node0(std::vector<NodeLink>& links, int node_rank, const std::vector<char>& payload) {
  if (links.empty()) return payload;
  if (node_rank == 0) {
    for (NodeLink& link : links) link.send(MessageType::CommunicatorId, payload);
    return payload;
  }
  return links.at(0).receive(MessageType::CommunicatorId);
}

}  // namespace dcu
