#include "engine/engine_factory.h"

#include <algorithm>

#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/cache_plan.h"
#include "engine/llm_engine.h"
#include "engine/local_ranks.h"

namespace dcu {
namespace {

constexpr int kBlockSize = 16;

}  // namespace

std::unique_ptr<Engine> create_engine(const EngineOptions& o, const CommunicatorFactory& make_communicators) {
  ModelConfig config = model_config_for(o);
  check_group_options(o, config);
  if (o.node_rank != 0)
    fail("--node-rank {}: the engine runs on node 0; the other nodes run the follower loop (dcuserve serve does)",
         o.node_rank);
  const int max_model_len = o.max_model_len > 0 ? o.max_model_len : int(config.max_position_embeddings);
  if (o.max_model_len > config.max_position_embeddings)
    log::warn("--max-model-len {} exceeds the model's max_position_embeddings {}", o.max_model_len,
              config.max_position_embeddings);
  const int k = o.num_speculative_tokens;
  if (k > 0 && o.nnodes > 1)
    fail("--speculative-config: speculative decoding across several nodes (--nnodes {}) is not supported yet",
         o.nnodes);
  const StepCapacity capacity = step_capacity(o);
  LlmEngineOptions eo;
  eo.limits.max_num_seqs = o.max_num_seqs;
  eo.limits.max_num_batched_tokens = capacity.max_tokens;
  eo.limits.block_size = kBlockSize;
  eo.limits.max_logit_rows = capacity.max_logit_rows;
  eo.max_model_len = max_model_len;
  eo.max_waiting_requests = o.max_waiting_requests;
  eo.seed = o.seed;
  eo.num_speculative_tokens = k;
  eo.mask_budget = std::chrono::microseconds(int64_t(o.mask_budget_ms * 1000.0));
  eo.limits.state_slots_per_seq = 1 + k;
  eo.eos_token_ids = o.random_weights ? std::vector<int32_t>{} : load_generation_defaults(o.model_dir).eos_token_ids;

  LocalRanks ranks(o, std::move(config), make_communicators);
  if (o.nnodes > 1) log::info("node 0 of {}: waiting for the other nodes on port {}", o.nnodes, o.master_port);
  std::vector<NodeLink> followers = connect_nodes({o.nnodes, o.node_rank, o.master_addr, o.master_port});
  ModelInstance model;
  try {
    if (!followers.empty()) check_follower_settings(followers, ranks.settings(capacity));
    ranks.make_communicators(followers);
    ranks.load_weights();
    CachePlanRequest plan;
    plan.max_model_len = max_model_len;
    plan.max_num_seqs = o.max_num_seqs;
    plan.block_size = kBlockSize;
    plan.kv_dtype = ranks.kv_dtype();
    plan.state_slots_per_sequence = 1 + k;
    plan.draft_layers = k > 0 ? 1 : 0;
    const CacheShape shape = agree_cache_shape(followers, ranks.cache_budget(capacity), [&](size_t budget) {
      plan.budget_bytes = budget;
      return plan_cache(ranks.local_config(), plan);
    });
    model = ranks.finish(shape, capacity);
  } catch (const Error& e) {
    for (NodeLink& f : followers) f.send_failure(e.what());
    throw;
  }
  if (!followers.empty()) {
    log::info("node 0 of {}: every node is ready", o.nnodes);
    model.followers = std::make_unique<StepBroadcaster>(std::move(followers), model.communicator_abort());
  }
  eo.limits.max_num_seqs = std::min(o.max_num_seqs, model.ranks[0].cache->shape().num_state_slots / (1 + k));
  return std::make_unique<LlmEngine>(std::move(model), eo);
}

}  // namespace dcu
