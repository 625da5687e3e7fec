#pragma once
// The multi-host rendezvous: node 0 listens on master_addr:master_port, every other node connects and
// receives node 0's payload (the NCCL/RCCL unique id). Plain TCP; nothing else travels over it.

#include <string>
#include <vector>

namespace dcu {

struct RendezvousOptions {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int timeout_s = 300;  // how long node 0 waits for the others, and the others retry connecting
};

// Node 0: sends `payload` to each of the other nnodes - 1 nodes (each says its node rank first; a
// rank seen twice or out of range is an error) and returns it. Other nodes: return node 0's payload.
// Throws dcu::Error naming the address and what failed.
std::vector<char> rendezvous_share(const RendezvousOptions& options, const std::vector<char>& payload);

}  // namespace dcu
