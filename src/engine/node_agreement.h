#pragma once
// What the nodes of a multi-host group agree on before the steps start. First the settings that must
// be equal everywhere, checked before any node initialises NCCL (a tensor-parallel size that differs
// would make NCCL wait forever) or loads weights. Then, once every node has loaded its weights, the
// cache shape: every rank holds the same blocks and slots, so node 0 plans it from the smallest cache
// budget of all nodes (free memory differs per host) and sends it to the others.

#include <cstdint>
#include <functional>
#include <vector>

#include "cache/cache_storage.h"
#include "comm/node_link.h"

namespace dcu {

struct NodeSettings {
  int32_t tensor_parallel_size = 0;
  int32_t max_tokens_per_step = 0;  // each runner's capacity: node 0's steps must fit every node's
  int32_t max_logit_rows = 0;
  int32_t kv_dtype = 0;             // DType of the KV cache, which the cache shape's bytes depend on
  int64_t parameter_count = 0;      // the model, as far as a number tells
};

// Node 0: every other node's settings equal `own`, else this throws naming the node and what differs.
void check_follower_settings(std::vector<NodeLink>& followers, const NodeSettings& own);
// Other nodes: sends `own` and returns when node 0 accepted them (throws node 0's error otherwise).
void offer_settings(NodeLink& node0, const NodeSettings& own);

// Node 0: plan(the smallest of own_budget and the others' budgets), sent to every other node.
CacheShape agree_cache_shape(std::vector<NodeLink>& followers, size_t own_budget,
                             const std::function<CacheShape(size_t budget)>& plan);
// Other nodes: reports own_budget and returns node 0's shape.
CacheShape receive_cache_shape(NodeLink& node0, size_t own_budget);

}  // namespace dcu
