#pragma once
// The multi-host rendezvous: node 0 listens on master_addr:master_port, every other node connects and
// says its node rank. The connections stay open as the group's links (NodeLink): they carry node 0's
// NCCL/RCCL unique id, the setup exchanges and then every step. Plain TCP.

#include <string>
#include <vector>

#include "comm/node_link.h"

namespace dcu {

struct RendezvousOptions {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int timeout_s = 300;  // how long node 0 waits for the others, and the others retry connecting
};

// Node 0: one link per other node, links[i] to node i + 1 (each node says its node rank and --nnodes
// first; a rank seen twice or out of range, or another --nnodes, is an error). Other nodes: one link,
// to node 0. One node: no links. Throws dcu::Error naming the address and what failed.
std::vector<NodeLink> connect_nodes(const RendezvousOptions& options);

// Node 0's `payload` on every node: node 0 sends it over its links and returns it, the others return what
// they receive on theirs (the NCCL/RCCL unique id). No links: `payload` itself.
std::vector<char> share_from_node0(std::vector<NodeLink>& links, int node_rank, const std::vector<char>& payload);

}  // namespace dcu
