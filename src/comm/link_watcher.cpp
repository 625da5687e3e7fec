#include "comm/link_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace dcu {

LinkWatcher::LinkWatcher(std::vector<NodeLink*> links, Mode mode, std::function<void(const std::string&)> on_lost)
    : links_(std::move(links)), mode_(mode), on_lost_(std::move(on_lost)) {
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) fail("cannot create a pipe to stop the link watcher ({})", std::strerror(errno));
  thread_ = std::thread([this] { watch(); });
}

LinkWatcher::~LinkWatcher() {
  const char stop = 1;
  (void)!::write(stop_pipe_[1], &stop, 1);
  thread_.join();
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

void LinkWatcher::watch() {
  // A peer's close shows as POLLRDHUP (even with unread messages before it), a reset or timeout as POLLERR.
  const short events = short(POLLRDHUP | (mode_ == Mode::ReadMessages ? POLLIN : 0));
  std::vector<pollfd> fds;
  for (NodeLink* link : links_) fds.push_back({link->fd(), events, 0});
  fds.push_back({stop_pipe_[0], POLLIN, 0});
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      on_lost_(fmt::format("watching the node links failed ({})", std::strerror(errno)));
      return;
    }
    if (fds.back().revents) return;  // stopping
    for (size_t i = 0; i < links_.size(); ++i) {
      if (!fds[i].revents) continue;
      NodeLink& link = *links_[i];
      if (mode_ == Mode::ReadMessages) {
        on_lost_(read_reason(link));
      } else if (fds[i].revents & POLLERR) {
        int error = 0;
        socklen_t len = sizeof error;
        ::getsockopt(link.fd(), SOL_SOCKET, SO_ERROR, &error, &len);
        on_lost_(fmt::format("{} is unreachable ({})", link.peer(), std::strerror(error)));
      } else {
        on_lost_(fmt::format("{} closed the connection (it stopped or failed; see its log)", link.peer()));
      }
      return;
    }
  }
}

// The peer sends nothing after setup but a Failure message before it closes, so whatever is there is
// read (briefly: a peer that sends half a message and hangs must not keep this thread).
std::string LinkWatcher::read_reason(NodeLink& link) {
  try {
    const Message m = link.receive(5000);
    return fmt::format("{} sent an unexpected message (type {})", link.peer(), uint32_t(m.type));
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace dcu
