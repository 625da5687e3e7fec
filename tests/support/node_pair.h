#pragma once
// Test support: the two ends of a node link between node 0 and node 1 of a group of two, on localhost,
// and the error text a failing call throws.

#include <functional>
#include <future>
#include <string>
#include <utility>

#include "core/error.h"

#include "comm/rendezvous.h"
#include "support/test_port.h"

namespace dcu::testing {

struct NodePair {
  NodeLink node0_end;  // node 0's link to node 1
  NodeLink node1_end;  // node 1's link to node 0
};

inline NodePair connect_node_pair() {
  const int port = random_port();
  auto follower = std::async(std::launch::async, [port] { return connect_nodes({2, 1, "127.0.0.1", port, 20}); });
  std::vector<NodeLink> leader = connect_nodes({2, 0, "127.0.0.1", port, 20});
  std::vector<NodeLink> other = follower.get();
  return {std::move(leader.at(0)), std::move(other.at(0))};
}

// What `f` throws as dcu::Error, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace dcu::testing
