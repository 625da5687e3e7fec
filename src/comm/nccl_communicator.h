#pragma once
// Communicators over NCCL (CUDA builds) or RCCL (HIP builds), one per local GPU, created together.
// Across hosts, node 0's unique id reaches the other nodes over the node links (comm/rendezvous.h).

#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "comm/communicator.h"

namespace dcu {

struct NcclGroupOptions {
  std::vector<int> devices;      // the GPU of each local rank
  int first_rank = 0;            // global rank of devices[0] (node_rank * devices.size())
  int world_size = 0;            // ranks over all nodes
  // Multi-host: node 0's unique id to every node (share_from_node0 over the node links); empty on one
  // node, whose collectives can then be recorded in graphs (Communicator::records_in_graphs).
  std::function<std::vector<char>(const std::vector<char>&)> share_id;
};

// True when this build links NCCL or RCCL.
bool nccl_compiled();

// backends[i] runs on devices[i]; collectives wait for its queued work first. The backends must
// outlive the communicators, which drop the backends' graphs when destroyed. Throws dcu::Error when
// the build has no NCCL/RCCL or initialisation fails.
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const NcclGroupOptions& options,
                                                                   const std::vector<Backend*>& backends);

}  // namespace dcu
