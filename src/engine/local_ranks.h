#pragma once
// This node's tensor-parallel ranks, built in phases that a multi-host group interleaves with its
// exchanges between nodes: backends, communicators, weights (each GPU's cache budget is what its
// memory has left afterwards), then, once the cache shape is known (the same on every rank of every
// node), caches, runners and worker threads. create_engine (node 0 or one node) and
// run_follower_node (the other nodes) both build theirs here.

#include <memory>
#include <vector>

#include "comm/node_link.h"
#include "engine/engine_factory.h"
#include "engine/model_instance.h"
#include "engine/node_agreement.h"
#include "model/config.h"
#include "model/sharding.h"
#include "model/weights.h"

namespace dcu {

// What each rank's runner holds in one step: the same on every node.
struct StepCapacity {
  int max_tokens = 0;      // --max-num-batched-tokens
  int max_logit_rows = 0;  // one row per sequence at least (--max-num-seqs)
};
StepCapacity step_capacity(const EngineOptions& options);

// config.json of the model folder, or a built-in size with random weights.
ModelConfig model_config_for(const EngineOptions& options);
// The tensor-parallel size divides the model and the nodes; the node rank is one of them.
void check_group_options(const EngineOptions& options, const ModelConfig& config);

class LocalRanks {
 public:
  // The backends of this node's ranks (GPU i for local rank i, or simulated CPU ranks), checked to hold
  // their share of the weights. `make_communicators` empty: the default (engine_factory.h).
  LocalRanks(const EngineOptions& options, ModelConfig config, CommunicatorFactory make_communicators);

  int size() const { return int(backends_.size()); }
  DType kv_dtype() const;
  const ModelConfig& config() const { return config_; }
  // One rank's heads and intermediate size (the same on every rank).
  const ModelConfig& local_config() const { return local_config_; }
  // What this node must share with the others of a multi-host group.
  NodeSettings settings(const StepCapacity& capacity) const;

  // At tensor_parallel_size > 1. On several nodes, `links` carry node 0's NCCL/RCCL id.
  void make_communicators(std::vector<NodeLink>& links);
  void load_weights();
  // Bytes for caches on every rank: the smallest rank's (after load_weights).
  size_t cache_budget(const StepCapacity& capacity) const;
  // Caches of `shape`, runners and worker threads; this object is spent afterwards.
  ModelInstance finish(const CacheShape& shape, const StepCapacity& capacity);

 private:
  EngineOptions options_;
  ModelConfig config_;
  CommunicatorFactory make_communicators_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<ShardPlan> plans_;
  std::vector<ModelWeights> weights_;
  ModelConfig local_config_;
  WeightFormat quantize_ = WeightFormat::Dense;  // the 16-bit matrices' format (--quantization)
};

}  // namespace dcu
