#pragma once
// Splits a memory budget between GDN state slots and KV pages.

#include <cstddef>
#include <string>

#include "cache/cache_storage.h"
#include "model/config.h"

namespace dcu {

struct CachePlanRequest {
  size_t budget_bytes = 0;
  int max_model_len = 0;
  int max_num_seqs = 0;
  int block_size = 16;
  DType kv_dtype = DType::F32;
  int state_slots_per_sequence = 1;  // 1 + k with k speculative tokens (each verified row keeps its state)
  int draft_layers = 0;              // MTP attention layers, each with its own KV pages
};

// State slots get at most half the budget (state_slots_per_sequence per running sequence, up to
// max_num_seqs sequences); KV pages take the rest, up to what max_num_seqs sequences of max_model_len
// tokens can use. Throws dcu::Error, with the numbers, when the budget cannot hold one sequence of
// max_model_len tokens.
CacheShape plan_cache(const ModelConfig& config, const CachePlanRequest& request);

std::string format_bytes(double bytes);

}  // namespace dcu
