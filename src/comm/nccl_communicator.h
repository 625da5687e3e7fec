#pragma once
// Communicators over NCCL (CUDA builds) or RCCL (HIP builds), one per local GPU, created together.
// Across hosts, node 0's unique id reaches the other nodes over the node links (comm/rendezvous.h).

#include <functional>
#include <memory>
#include <string>
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

// True when this build uses NCCL (CUDA) or RCCL (HIP). The library itself is loaded at run time
// (comm/nccl_library.h), the first time a group is made or nccl_library_info() asks.
bool nccl_compiled();

// The NCCL or RCCL library of this build, loaded if it was not yet.
struct NcclLibraryInfo {
  std::string name;     // "libnccl.so.2" / "librccl.so.1"; empty when the build uses neither
  std::string path;     // the file loaded; empty when loading failed
  std::string version;  // "2.28.3", from ncclGetVersion
  std::string error;    // the loader's message when it could not be loaded (or a function is missing)
};
NcclLibraryInfo nccl_library_info();

// backends[i] runs on devices[i]; collectives wait for its queued work first. The backends must
// outlive the communicators, which drop the backends' graphs when destroyed. Throws dcu::Error when
// the build has no NCCL/RCCL, the library cannot be loaded or initialisation fails.
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const NcclGroupOptions& options,
                                                                   const std::vector<Backend*>& backends);

}  // namespace dcu
