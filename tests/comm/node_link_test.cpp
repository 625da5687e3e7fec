// Node links on localhost: framed messages both ways, a peer's failure message raised with its text,
// a closed connection reported with the peer's name (no hang), and the watcher that notices a peer
// going away while nobody reads.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "comm/link_watcher.h"
#include "core/error.h"
#include "support/node_pair.h"

namespace dcu {
namespace {

using testing::connect_node_pair;
using testing::error_of;
// (Tests name the two ends with references, not a structured binding: their lambdas capture them, which
// clang before 16 refuses for a binding.)


TEST(NodeLink, MessagesTravelBothWaysInOrder) {
  auto nodes = connect_node_pair();
  NodeLink& a = nodes.node0_end;
  NodeLink& b = nodes.node1_end;
  std::vector<char> big(3 << 20);  // larger than the socket buffers: sent while the other end reads
  for (size_t i = 0; i < big.size(); ++i) big[i] = char(i * 31 + 7);
  std::thread sender([&] {
    a.send(MessageType::Step, big);
    a.send(MessageType::Shutdown);
  });
  Message m = b.receive();
  EXPECT_EQ(m.type, MessageType::Step);
  EXPECT_EQ(m.bytes, big);
  EXPECT_EQ(b.receive().type, MessageType::Shutdown);
  sender.join();
  b.send(MessageType::CacheBudget, std::vector<char>{1, 2, 3});
  EXPECT_EQ(a.receive(MessageType::CacheBudget), (std::vector<char>{1, 2, 3}));
}

TEST(NodeLink, PeerFailureIsRaisedWithItsMessage) {
  auto nodes = connect_node_pair();
  NodeLink& a = nodes.node0_end;
  NodeLink& b = nodes.node1_end;
  b.send_failure("out of memory on GPU 0");
  EXPECT_EQ(error_of([&] { a.receive(); }), "node 1 failed: out of memory on GPU 0");
}

TEST(NodeLink, UnexpectedMessageTypeIsAnError) {
  auto nodes = connect_node_pair();
  NodeLink& a = nodes.node0_end;
  NodeLink& b = nodes.node1_end;
  a.send(MessageType::Shutdown);
  EXPECT_NE(error_of([&] { b.receive(MessageType::CacheShape); }).find("sent a shutdown message where a cache shape"),
            std::string::npos);
}

TEST(NodeLink, ClosedConnectionNamesThePeer) {
  auto nodes = connect_node_pair();
  NodeLink& a = nodes.node0_end;
  NodeLink& b = nodes.node1_end;
  { NodeLink gone = std::move(b); }
  EXPECT_NE(error_of([&] { a.receive(); }).find("node 1 closed the connection"), std::string::npos);
  // Sending into a connection the peer closed fails too (at the latest once the reset arrived).
  EXPECT_NE(error_of([&] {
              for (int i = 0; i < 100; ++i) {
                a.send(MessageType::Step, std::vector<char>(1024));
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
              }
            }).find("node 1 is unreachable"),
            std::string::npos);
}

TEST(NodeLink, ReceiveWithTimeoutGivesUp) {
  auto nodes = connect_node_pair();  // node 1's end stays open and sends nothing
  NodeLink& a = nodes.node0_end;
  EXPECT_NE(error_of([&] { a.receive(100); }).find("sent nothing within 0.1 s"), std::string::npos);
}

// Waits for the watcher's callback, at most a few seconds.
struct Lost {
  std::mutex mutex;
  std::condition_variable cv;
  std::string reason;
  int calls = 0;
  std::function<void(const std::string&)> callback() {
    return [this](const std::string& r) {
      std::lock_guard lock(mutex);
      reason = r;
      ++calls;
      cv.notify_all();
    };
  }
  bool wait() {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return calls > 0; });
  }
  int count() {  // under the mutex: the watcher's thread may be calling back (TSan)
    std::lock_guard lock(mutex);
    return calls;
  }
};

TEST(LinkWatcher, ClosedOnlyIgnoresMessagesAndReportsTheClose) {
  auto nodes = connect_node_pair();
  NodeLink& a = nodes.node0_end;
  NodeLink& b = nodes.node1_end;
  Lost lost;
  LinkWatcher watcher({&b}, LinkWatcher::Mode::ClosedOnly, lost.callback());
  a.send(MessageType::Step, std::vector<char>{9});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(lost.count(), 0);
  EXPECT_EQ(b.receive().bytes, std::vector<char>{9});  // still there for the owner
  { NodeLink gone = std::move(a); }
  ASSERT_TRUE(lost.wait());
  EXPECT_NE(lost.reason.find("node 0 at 127.0.0.1:"), std::string::npos) << lost.reason;
  EXPECT_NE(lost.reason.find("closed the connection"), std::string::npos) << lost.reason;
}

TEST(LinkWatcher, ReadMessagesReportsThePeersFailure) {
  auto nodes = connect_node_pair();
  NodeLink& a = nodes.node0_end;
  NodeLink& b = nodes.node1_end;
  Lost lost;
  LinkWatcher watcher({&a}, LinkWatcher::Mode::ReadMessages, lost.callback());
  b.send_failure("CUDA error: an illegal memory access");
  { NodeLink gone = std::move(b); }
  ASSERT_TRUE(lost.wait());
  EXPECT_EQ(lost.reason, "node 1 failed: CUDA error: an illegal memory access");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(lost.count(), 1);
}

TEST(LinkWatcher, StopsQuietlyWhileTheLinksLive) {
  auto nodes = connect_node_pair();
  NodeLink& a = nodes.node0_end;
  NodeLink& b = nodes.node1_end;
  Lost lost;
  { LinkWatcher watcher({&a, &b}, LinkWatcher::Mode::ReadMessages, lost.callback()); }
  EXPECT_EQ(lost.count(), 0);
}

}  // namespace
}  // namespace dcu
