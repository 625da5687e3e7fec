#pragma once
// Notices, on its own thread, that the other end of a node link went away (stopped, crashed, or its
// host went silent past the keepalive) while this node may be blocked in a collective that waits for
// it. A rank on another host never arrives after that, and NCCL would wait for it forever: the
// callback aborts this node's communicators.

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "comm/node_link.h"

namespace dcu {

class LinkWatcher {
 public:
  enum class Mode {
    // The owner reads these links itself (a follower reading steps): only a closed connection counts.
    ClosedOnly,
    // Nobody else reads these links (node 0 after setup): whatever arrives is read here; a Failure
    // message, with the peer's error, or a closed connection counts.
    ReadMessages,
  };

  // Calls on_lost(reason) once, for the first link that goes away; reason names the peer. The links
  // must outlive the watcher.
  LinkWatcher(std::vector<NodeLink*> links, Mode mode, std::function<void(const std::string& reason)> on_lost);
  ~LinkWatcher();  // stops watching
  LinkWatcher(const LinkWatcher&) = delete;
  LinkWatcher& operator=(const LinkWatcher&) = delete;

 private:
  void watch();
  std::string read_reason(NodeLink& link);

  std::vector<NodeLink*> links_;
  Mode mode_;
  std::function<void(const std::string&)> on_lost_;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace dcu
