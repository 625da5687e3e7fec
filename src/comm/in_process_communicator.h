#pragma once
// Communicators for ranks that are threads of one process: they meet at a shared barrier and sum
// through host memory. The CPU backend's tensors are read in place; other backends' tensors are
// staged through host memory (a fallback for GPUs without NCCL/RCCL).

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "comm/communicator.h"

namespace dcu {

// One communicator per backend, rank i using backends[i]. The backends must outlive the communicators.
std::vector<std::unique_ptr<Communicator>> make_in_process_communicators(const std::vector<Backend*>& backends);

}  // namespace dcu
