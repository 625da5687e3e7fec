#pragma once
// Test support: a random high TCP port for tests that listen on localhost (node 0 of a multi-host group).

#include <random>

namespace dcu::testing {

inline int random_port() {
  std::random_device rd;
  return 20000 + int(rd() % 20000);
}

}  // namespace dcu::testing
