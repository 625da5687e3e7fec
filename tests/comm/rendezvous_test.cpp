// The TCP rendezvous on localhost: node 0's payload reaches every other node; bad arguments and a
// missing node 0 fail with a message.

#include <future>
#include <random>

#include <gtest/gtest.h>

#include "comm/rendezvous.h"
#include "core/error.h"

namespace dcu {
namespace {

int test_port() {
  std::random_device rd;
  return 20000 + int(rd() % 20000);
}

TEST(Rendezvous, NodeZeroPayloadReachesEveryNode) {
  const int nnodes = 4;
  const int port = test_port();
  std::vector<char> payload(128);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = char(i * 7 + 3);
  std::vector<std::future<std::vector<char>>> nodes;
  for (int n = nnodes - 1; n >= 0; --n) {  // followers first: they must wait for node 0 to listen
    RendezvousOptions o{nnodes, n, "127.0.0.1", port, 20};
    nodes.push_back(std::async(std::launch::async, [o, n, &payload] {
      return rendezvous_share(o, n == 0 ? payload : std::vector<char>{});
    }));
  }
  for (auto& f : nodes) EXPECT_EQ(f.get(), payload);
}

TEST(Rendezvous, SingleNodeNeedsNoNetwork) {
  std::vector<char> payload{1, 2, 3};
  EXPECT_EQ(rendezvous_share(RendezvousOptions{1, 0, "no.such.host.invalid", 1, 1}, payload), payload);
}

TEST(Rendezvous, RejectsBadArguments) {
  EXPECT_THROW(rendezvous_share(RendezvousOptions{2, 2, "127.0.0.1", 29500, 1}, {}), Error);
  EXPECT_THROW(rendezvous_share(RendezvousOptions{2, 1, "127.0.0.1", 70000, 1}, {}), Error);
}

TEST(Rendezvous, FollowerGivesUpWhenNodeZeroNeverListens) {
  try {
    rendezvous_share(RendezvousOptions{2, 1, "127.0.0.1", test_port(), 1}, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did not answer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dcu
