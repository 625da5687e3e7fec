#pragma once
// The other nodes of a multi-host tensor-parallel group (node_rank > 0). Node 0 runs the engine
// (scheduler, sampling, the HTTP server); each other node builds its own ranks as node 0 does, then
// runs every step node 0 sends, on those ranks, at the same time as node 0 runs it on its own.

#include "engine/engine_factory.h"

namespace dcu {

// Joins node 0 at master_addr:master_port, agrees on the settings and the cache shape, loads this node's
// share of the weights, then runs node 0's steps. Returns when node 0 shuts the group down; throws
// dcu::Error when node 0 fails or goes away, or when a step fails here (node 0 is told).
void run_follower_node(const EngineOptions& options, const CommunicatorFactory& make_communicators = {});

}  // namespace dcu
