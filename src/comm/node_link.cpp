#include "comm/node_link.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace dcu {
namespace {

struct FrameHeader {
  uint32_t type;
  uint32_t reserved;
  uint64_t size;
};

constexpr uint64_t kMaxMessageBytes = uint64_t(1) << 30;

// Small steps must not wait for Nagle, and a peer whose host vanished (no FIN, no RST) must show up
// as an error within about half a minute instead of never: keepalive probes while idle, a limit on
// unacknowledged data while sending.
void configure(int fd) {
  int one = 1, idle_s = 10, interval_s = 5, probes = 3;
  unsigned user_timeout_ms = 30000;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

const char* type_name(MessageType t) {
  switch (t) {
    case MessageType::Failure: return "failure";
    case MessageType::CommunicatorId: return "communicator id";
    case MessageType::Settings: return "settings";
    case MessageType::Accept: return "accept";
    case MessageType::CacheBudget: return "cache budget";
    case MessageType::CacheShape: return "cache shape";
    case MessageType::Step: return "step";
    case MessageType::Shutdown: return "shutdown";
  }
  return "unknown";
}

}  // namespace

NodeLink::NodeLink(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) { configure(fd_); }

NodeLink::~NodeLink() {
  if (fd_ >= 0) ::close(fd_);
}

NodeLink::NodeLink(NodeLink&& o) noexcept : fd_(std::exchange(o.fd_, -1)), peer_(std::move(o.peer_)) {}

NodeLink& NodeLink::operator=(NodeLink&& o) noexcept {
  std::swap(fd_, o.fd_);
  std::swap(peer_, o.peer_);
  return *this;
}

void NodeLink::send(MessageType type, std::span<const char> bytes) {
  const FrameHeader header{uint32_t(type), 0, bytes.size()};
  iovec parts[2] = {{const_cast<FrameHeader*>(&header), sizeof header},
                    {const_cast<char*>(bytes.data()), bytes.size()}};
  msghdr msg{};
  msg.msg_iov = parts;
  msg.msg_iovlen = 2;
  size_t left = sizeof header + bytes.size();
  while (left) {
    const ssize_t k = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail("{} is unreachable: sending a {} message failed ({})", peer_, type_name(type), std::strerror(errno));
    left -= size_t(k);
    // Skip what was sent in the parts.
    size_t sent = size_t(k);
    while (sent && msg.msg_iovlen) {
      const size_t step = std::min(sent, msg.msg_iov->iov_len);
      msg.msg_iov->iov_base = static_cast<char*>(msg.msg_iov->iov_base) + step;
      msg.msg_iov->iov_len -= step;
      sent -= step;
      if (msg.msg_iov->iov_len == 0) ++msg.msg_iov, --msg.msg_iovlen;
    }
  }
}

void NodeLink::read_exactly(void* data, size_t n, int timeout_ms) {
  char* p = static_cast<char*>(data);
  while (n) {
    if (timeout_ms >= 0) {
      pollfd pfd{fd_, POLLIN, 0};
      const int ready = ::poll(&pfd, 1, timeout_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) fail("{} sent nothing within {} s", peer_, timeout_ms / 1000.0);
    }
    const ssize_t k = ::recv(fd_, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k == 0) fail("{} closed the connection (it stopped or failed; see its log)", peer_);
    if (k < 0) fail("{} is unreachable: receiving failed ({})", peer_, std::strerror(errno));
    p += k;
    n -= size_t(k);
  }
}

Message NodeLink::receive(int timeout_ms) {
  FrameHeader header{};
  read_exactly(&header, sizeof header, timeout_ms);
  if (header.type < uint32_t(MessageType::Failure) || header.type > uint32_t(MessageType::Shutdown) ||
      header.size > kMaxMessageBytes)
    fail("{} sent a malformed message (type {}, {} bytes): is it running the same dcuserve version?", peer_,
         header.type, header.size);
  Message m{MessageType(header.type), std::vector<char>(size_t(header.size))};
  read_exactly(m.bytes.data(), m.bytes.size(), timeout_ms);
  if (m.type == MessageType::Failure) fail("{} failed: {}", peer_, std::string(m.bytes.begin(), m.bytes.end()));
  return m;
}

std::vector<char> NodeLink::receive(MessageType expected) {
  Message m = receive();
  if (m.type != expected)
    fail("{} sent a {} message where a {} message was due", peer_, type_name(m.type), type_name(expected));
  return std::move(m.bytes);
}

void NodeLink::send_failure(const std::string& message) noexcept {
  try {
    send(MessageType::Failure, message);
  } catch (...) {  // the peer is gone already: nobody to tell
  }
}

void NodeLink::shut_down() noexcept {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace dcu
