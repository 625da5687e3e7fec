#pragma once
// A TCP connection between node 0 and one other node of a multi-host group, open for the group's life.
// It carries framed messages (a type and bytes) both ways: the setup exchanges, then node 0's steps.
// Both hosts must have the same byte order (x86-64 and aarch64 are little-endian).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dcu {

// Every message of the multi-host protocol (docs/TENSOR_PARALLEL.md, "Multi-host").
enum class MessageType : uint32_t {
  Failure = 1,      // either way: the sender failed; the bytes are its error message
  CommunicatorId,   // node 0 -> others: the NCCL/RCCL unique id
  Settings,         // others -> node 0: the settings every node must share
  Accept,           // node 0 -> others: the settings match
  CacheBudget,      // others -> node 0: this node's cache budget in bytes
  CacheShape,       // node 0 -> others: the cache shape every rank uses
  Step,             // node 0 -> others: one model step's sequences
  Shutdown,         // node 0 -> others: the group stops; exit normally
};

struct Message {
  MessageType type;
  std::vector<char> bytes;
};

class NodeLink {
 public:
  // Takes a connected socket; `peer` describes the other end for error messages ("node 1", "node 0 at host:port").
  NodeLink(int fd, std::string peer);
  ~NodeLink();
  NodeLink(NodeLink&& other) noexcept;
  NodeLink& operator=(NodeLink&& other) noexcept;
  NodeLink(const NodeLink&) = delete;
  NodeLink& operator=(const NodeLink&) = delete;

  const std::string& peer() const { return peer_; }
  int fd() const { return fd_; }

  // Throws dcu::Error naming the peer when the connection is gone.
  void send(MessageType type, std::span<const char> bytes = {});
  // The next message; waits at most timeout_ms (-1: as long as the peer lives). A Failure message is
  // thrown as dcu::Error("<peer> failed: <its message>"); a closed connection or a timeout also throws.
  Message receive(int timeout_ms = -1);
  // receive(), and an error unless the message has type `expected`.
  std::vector<char> receive(MessageType expected);
  // Tells the peer this node failed, if the connection still works; never throws.
  void send_failure(const std::string& message) noexcept;
  // Ends the connection both ways (the peer sees it closed); the descriptor stays valid until destruction.
  void shut_down() noexcept;

 private:
  void read_exactly(void* data, size_t n, int timeout_ms);

  int fd_;
  std::string peer_;
};

}  // namespace dcu
