// The TCP rendezvous on localhost: every node gets a link to node 0 (node 0 one to each, in node rank
// order) and node 0's payload travels over them; bad arguments, a node with another --nnodes and a
// missing node 0 fail with a message.

#include <future>

#include <gtest/gtest.h>

#include "comm/rendezvous.h"
#include "core/error.h"
#include "support/test_port.h"

namespace dcu {
namespace {

TEST(Rendezvous, NodeZeroPayloadReachesEveryNodeOverItsLinks) {
  const int nnodes = 4;
  const int port = testing::random_port();
  std::vector<char> payload(128);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = char(i * 7 + 3);
  std::vector<std::future<std::vector<char>>> nodes;
  for (int n = nnodes - 1; n >= 0; --n) {  // followers first: they must wait for node 0 to listen
    RendezvousOptions o{nnodes, n, "127.0.0.1", port, 20};
    nodes.push_back(std::async(std::launch::async, [o, n, &payload] {
      std::vector<NodeLink> links = connect_nodes(o);
      EXPECT_EQ(links.size(), n == 0 ? size_t(nnodes - 1) : size_t(1));
      if (n == 0)
        for (size_t i = 0; i < links.size(); ++i) EXPECT_EQ(links[i].peer(), "node " + std::to_string(i + 1));
      else
        EXPECT_EQ(links[0].peer(), "node 0 at 127.0.0.1:" + std::to_string(o.master_port));
      return share_from_node0(links, n, n == 0 ? payload : std::vector<char>{});
    }));
  }
  for (auto& f : nodes) EXPECT_EQ(f.get(), payload);
}

TEST(Rendezvous, SingleNodeNeedsNoNetwork) {
  std::vector<NodeLink> links = connect_nodes(RendezvousOptions{1, 0, "no.such.host.invalid", 1, 1});
  EXPECT_TRUE(links.empty());
  std::vector<char> payload{1, 2, 3};
  EXPECT_EQ(share_from_node0(links, 0, payload), payload);
}

TEST(Rendezvous, RejectsBadArguments) {
  EXPECT_THROW(connect_nodes(RendezvousOptions{2, 2, "127.0.0.1", 29500, 1}), Error);
  EXPECT_THROW(connect_nodes(RendezvousOptions{2, 1, "127.0.0.1", 70000, 1}), Error);
}

TEST(Rendezvous, NodeZeroRefusesANodeWithAnotherNodeCount) {
  const int port = testing::random_port();
  auto follower = std::async(std::launch::async, [port] {
    return connect_nodes(RendezvousOptions{3, 1, "127.0.0.1", port, 20});  // succeeds: node 0 accepts, then checks
  });
  try {
    connect_nodes(RendezvousOptions{2, 0, "127.0.0.1", port, 20});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 1 was started with --nnodes 3, node 0 with --nnodes 2"),
              std::string::npos)
        << e.what();
  }
  follower.get();
}

TEST(Rendezvous, FollowerGivesUpWhenNodeZeroNeverListens) {
  try {
    connect_nodes(RendezvousOptions{2, 1, "127.0.0.1", testing::random_port(), 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did not answer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dcu
