#pragma once
// Test support: a random TCP port for tests that listen on localhost (node 0 of a multi-host group).
// Below Linux's ephemeral range (32768-60999 by default): there, a port may still belong to an earlier
// test's client connection in TIME_WAIT, and listening on it fails.

#include <random>

namespace dcu::testing {

inline int random_port() {
  std::random_device rd;
  return 20000 + int(rd() % 12000);
}

}  // namespace dcu::testing
